package lambdaio

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/requestid"
)

// A buffered request (HTTP API, buffered REST API) runs under a deadline
// before API Gateway's 29 s integration timeout, so that the engine ends
// it (incomplete, reason deadline) with a reply rather than API Gateway
// with a bare 504; a streamed one keeps the invocation's deadline.
func TestBufferedRequestsEndBeforeTheIntegrationTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var left time.Duration
		h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, ok := r.Context().Deadline()
			require.True(t, ok, "a deadline")
			left = time.Until(d)
		}), Config{Logger: quiet()})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // the invocation's
		defer cancel()
		_, err := h.Handle(ctx, mustJSON(t, httpAPIEvent("POST", "/v1/responses", `{}`)))
		require.NoError(t, err)
		assert.Equal(t, DefaultBufferedTimeout, left, "HTTP API")
		assert.Less(t, left, 29*time.Second)
		ev := restEvent("POST", "/v1/responses", `{}`)
		ev.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
		_, err = h.Handle(ctx, mustJSON(t, ev))
		require.NoError(t, err)
		assert.Equal(t, DefaultBufferedTimeout, left, "buffered REST API")
	})
}

// A buffered reply over Lambda's 6 MB (measured as encoded, escaping
// included) is replaced by a 400 in the OpenAI error shape that names the
// response and says how to get it; a reply under it passes unchanged.
func TestBufferedReplyOverSixMB(t *testing.T) {
	t.Parallel()
	var body string
	h := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(requestid.Header, "req_0123456789abcdef0123456789abcdef")
		_, _ = w.Write([]byte(body))
	}), Config{Logger: quiet()})
	response := func(text string) string {
		b, err := json.Marshal(map[string]any{"id": "resp_big", "object": "response", "output_text": text})
		require.NoError(t, err)
		return string(b)
	}
	check := func(t *testing.T, status int, headers map[string]string, reply string) {
		t.Helper()
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Equal(t, "req_0123456789abcdef0123456789abcdef", headers[requestid.Header])
		var e struct {
			Error struct{ Type, Code, Param, Message string }
		}
		require.NoError(t, json.Unmarshal([]byte(reply), &e))
		assert.Equal(t, "invalid_request_error", e.Error.Type)
		assert.Equal(t, "response_too_large", e.Error.Code)
		assert.Equal(t, "stream", e.Error.Param)
		assert.Contains(t, e.Error.Message, "resp_big")
		assert.Contains(t, e.Error.Message, `"stream": true`)
	}

	// 5 MB of quotes: 5 MB of body, 10 MB once escaped in the event.
	body = response(strings.Repeat(`"`, 5<<20))
	out, err := h.Handle(testCtx(t), mustJSON(t, httpAPIEvent("POST", "/v1/responses", `{}`)))
	require.NoError(t, err)
	v2 := out.(events.APIGatewayV2HTTPResponse)
	check(t, v2.StatusCode, v2.Headers, v2.Body)

	body = response(strings.Repeat("x", 7<<20))
	ev := restEvent("POST", "/v1/responses", `{}`)
	ev.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
	out, err = h.Handle(testCtx(t), mustJSON(t, ev))
	require.NoError(t, err)
	v1 := out.(events.APIGatewayProxyResponse)
	check(t, v1.StatusCode, v1.Headers, v1.Body)

	// Just under: unchanged.
	body = response(strings.Repeat("x", 5<<20))
	out, err = h.Handle(testCtx(t), mustJSON(t, httpAPIEvent("POST", "/v1/responses", `{}`)))
	require.NoError(t, err)
	v2 = out.(events.APIGatewayV2HTTPResponse)
	assert.Equal(t, http.StatusOK, v2.StatusCode)
	assert.Equal(t, body, v2.Body)
}
