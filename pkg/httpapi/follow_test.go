package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/store"
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

// failingEvents is a memory store whose event log reads fail while fail
// is set (a store outage while a client follows a background response).
type failingEvents struct {
	*store.Memory
	fail atomic.Bool
}

func (f *failingEvents) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	if f.fail.Load() {
		return nil, errors.New("event log unavailable")
	}
	return f.Memory.Events(ctx, id, after)
}

// A followed stream whose event log fails after it started ends with an
// error event and data: [DONE] (OpenResponses: "The terminal event MUST be
// the literal string [DONE]"), which the official client reports as an
// error, rather than stopping short as if the response had ended.
func TestFollowStoreFailureEndsWithError(t *testing.T) {
	t.Parallel()
	st := &failingEvents{Memory: store.NewMemory(store.MemoryConfig{})}
	block := make(chan struct{})
	defer close(block)
	g := newGatewayWith(t, fakellm.New(fakellm.Turn{Text: "never sent", Block: block}), nil, &app.Options{Store: st})
	ctx := context.Background()
	p := textParams("x")
	p.Background = openai.Bool(true)
	created, err := g.client.Responses.New(ctx, p)
	require.NoError(t, err)

	t.Run("sdk", func(t *testing.T) {
		st.fail.Store(false)
		stream := g.client.Responses.GetStreaming(ctx, created.ID, responses.ResponseGetParams{})
		defer stream.Close()
		require.True(t, stream.Next(), "%v", stream.Err())
		require.Equal(t, "response.created", stream.Current().Type)
		st.fail.Store(true)
		for stream.Next() {
		}
		require.Error(t, stream.Err(), "the stream ended as if nothing had failed")
	})
	t.Run("raw", func(t *testing.T) {
		st.fail.Store(false)
		req, err := http.NewRequest(http.MethodGet, g.srv.URL+"/v1/responses/"+created.ID+"?stream=true", nil)
		require.NoError(t, err)
		res, err := g.http.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "event: response.created\n", line)
		st.fail.Store(true)
		rest, err := io.ReadAll(r)
		require.NoError(t, err)
		evs, done, err := ssecheck.Parse(strings.NewReader(line + string(rest)))
		require.NoError(t, err)
		require.True(t, done, "no data: [DONE]: %s", rest)
		last := evs[len(evs)-1]
		require.Equal(t, "error", last.Type)
		require.Greater(t, last.Seq, evs[len(evs)-2].Seq)
		require.Contains(t, string(last.Data), `"type":"server_error"`)
		require.NotContains(t, string(last.Data), "event log unavailable")
	})
}
