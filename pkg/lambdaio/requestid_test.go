package lambdaio

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/requestid"
)

// The log lines of a request served in Lambda carry the gateway's request
// id (x-request-id), the invocation's and the front door's: an operator
// finds the Lambda and API Gateway logs of a tenant's request id.
func TestLogLinesCarryTheFrontDoorsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(requestid.NewHandler(slog.NewJSONHandler(&buf, nil)))
	handler := requestid.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "served")
		w.WriteHeader(http.StatusNoContent)
	}))
	rest := restEvent("POST", "/v1/responses", "{}")
	rest.RequestContext.RequestID = "gw-rest-1"
	rest.StageVariables = map[string]string{TransferModeStageVariable: "BUFFERED"}
	v2 := httpAPIEvent("POST", "/v1/responses", "{}")
	v2.RequestContext.RequestID = "gw-v2-1"
	for _, c := range []struct {
		name, key, id string
		event         any
	}{
		{"function URL", FunctionURLRequestKey, "req-1", urlEvent("POST", "/v1/responses", "", "{}")},
		{"REST API", GatewayRequestKey, "gw-rest-1", rest},
		{"HTTP API", GatewayRequestKey, "gw-v2-1", v2},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf.Reset()
			ctx := lambdacontext.NewContext(testCtx(t), &lambdacontext.LambdaContext{AwsRequestID: "aws-" + c.id})
			out, err := New(handler, Config{Logger: quiet()}).Handle(ctx, mustJSON(t, c.event))
			require.NoError(t, err)
			var header string
			switch r := out.(type) {
			case *events.LambdaFunctionURLStreamingResponse:
				_, _ = io.ReadAll(r)
				require.NoError(t, r.Close())
				header = r.Headers[requestid.Header]
			case events.APIGatewayProxyResponse:
				header = r.MultiValueHeaders[requestid.Header][0]
			case events.APIGatewayV2HTTPResponse:
				header = r.Headers[requestid.Header]
			default:
				t.Fatalf("reply %T", out)
			}
			var line map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
			assert.Regexp(t, `^req_[0-9a-f]{32}$`, line["request_id"])
			assert.Equal(t, line["request_id"], header, "the reply's x-request-id")
			assert.Equal(t, "aws-"+c.id, line[requestid.LambdaKey])
			assert.Equal(t, c.id, line[c.key])
		})
	}
}
