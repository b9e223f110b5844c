package httpapi_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// onEvent is an SDK stream that calls fn with each event as it is read.
type onEvent struct {
	*ssestream.Stream[responses.ResponseStreamEventUnion]
	fn func(responses.ResponseStreamEventUnion)
}

func (s onEvent) Next() bool {
	if !s.Stream.Next() {
		return false
	}
	s.fn(s.Current())
	return true
}

// A background response streamed through openai-go and cancelled (POST
// /cancel) while the model streams a call's arguments ends cancelled with
// the call in_progress, half its arguments, and no done event for it; a
// continuation by previous_response_id gives the model the text it had
// written but not the cut call, nor a made-up result for it.
func TestContinuationAfterCancelInsideToolCall(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	// The role chunk, the text's three words, the call's start and the
	// first 8 bytes of its arguments; then the model call is held.
	fake := fakellm.New(fakellm.Turn{Text: "Let me look.", HoldAfterChunks: 6, Block: hold,
		ToolCalls: []fakellm.ToolCall{{ID: "call_cut", Name: "exec", Arguments: `{"cmd":"ls -la /tmp"}`}}}, fakellm.Turn{Text: "Done."})
	g := newGateway(t, fake, nil)
	ctx := context.Background()
	p := execParams("list /tmp")
	p.Background = openai.Bool(true)
	var id string
	s := onEvent{Stream: g.client.Responses.NewStreaming(ctx, p), fn: func(ev responses.ResponseStreamEventUnion) {
		switch ev.Type {
		case "response.created":
			id = ev.Response.ID
		case "response.function_call_arguments.delta":
			r, err := g.client.Responses.Cancel(ctx, id)
			require.NoError(t, err)
			require.Equal(t, responses.ResponseStatusCancelled, r.Status)
		}
	}}
	var cancelled *responses.Response
	for _, e := range readSDKStream(t, s) {
		switch e.ev.Type {
		case "response.cancelled":
			r := e.ev.Response
			cancelled = &r
		case "response.output_item.done":
			require.Equal(t, "message", e.ev.Item.Type, "the cut call is not done")
		}
	}
	require.NotNil(t, cancelled)
	require.Len(t, cancelled.Output, 2)
	require.Equal(t, "function_call", cancelled.Output[1].Type)
	require.Equal(t, "in_progress", string(cancelled.Output[1].Status))
	require.Equal(t, `{"cmd":"`, cancelled.Output[1].Arguments.OfString)

	p = execParams("go on")
	p.PreviousResponseID = openai.String(id)
	r, err := g.client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "Done.", r.OutputText())
	msgs := fake.Requests()[1].Messages
	require.Len(t, msgs, 3)
	require.Equal(t, "Let me look.", msgs[1].Content.String())
	require.Empty(t, msgs[1].ToolCalls, "no cut call")
	require.Equal(t, "user", msgs[2].Role, "no result for it")
}
