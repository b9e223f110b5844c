package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// Resuming the stream of a finished background response at or past its
// terminal event answers at once: an SSE stream of only [DONE], no
// made-up event, which the official client reads as an empty stream.
func TestResumePastTheEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "done in the background"}), nil)
	ctx := context.Background()
	p := textParams("x")
	p.Background = openai.Bool(true)
	created, err := g.client.Responses.New(ctx, p)
	require.NoError(t, err)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		r, err := g.client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		if r.Status == "completed" {
			break
		}
	}
	status, _, body := g.do(http.MethodGet, "/v1/responses/"+created.ID+"?stream=true", "", "")
	require.Equal(t, http.StatusOK, status)
	all, done, err := ssecheck.Parse(bytes.NewReader(body))
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, "response.completed", all[len(all)-1].Type)
	end := all[len(all)-1].Seq

	for _, after := range []int64{end, end + 1, end + 100} {
		status, hdr, body := g.do(http.MethodGet, "/v1/responses/"+created.ID+"?stream=true&starting_after="+strconv.FormatInt(after, 10), "", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "text/event-stream; charset=utf-8", hdr.Get("Content-Type"))
		require.Equal(t, "data: [DONE]\n\n", string(body), "starting_after=%d", after)
	}
	stream := g.client.Responses.GetStreaming(ctx, created.ID, responses.ResponseGetParams{StartingAfter: openai.Int(end)})
	for stream.Next() {
		t.Fatalf("unexpected event %s", stream.Current().Type)
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
}
