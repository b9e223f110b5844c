package dynamodb

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/provider"
)

// deepShellModel calls the shell tool with arguments nested deeper than
// the bound of a client's input item values (api.MaxItemValueDepth).
type deepShellModel struct{}

func (deepShellModel) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	deep := strings.Repeat("[", api.MaxItemValueDepth+6) + strings.Repeat("]", api.MaxItemValueDepth+6)
	return &provider.Result{ToolCalls: []api.Item{{Type: api.ItemFunctionCall, CallID: "call_1", Name: "shell",
		Arguments: `{"commands":["ls"],"extra":` + deep + `}`}}, FinishReason: provider.FinishToolCalls}, nil
}

func (m deepShellModel) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := m.Complete(ctx, req)
	c := res.ToolCalls[0]
	return res, fn(provider.Delta{Kind: provider.DeltaToolCall, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments})
}

// TestModelItemDeeperThanInputBoundReadsBack: a shell_call's action is
// the model's arguments as they came; one nested deeper than a client may
// send in input is stored, and the response reads back (the bound of
// input items, applied as the stored record was decoded, made it a 500 on
// DynamoDB, where the memory store answered).
func TestModelItemDeeperThanInputBoundReadsBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	e, err := engine.New(engine.Config{Provider: deepShellModel{}, Store: s, DefaultModel: "m", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx := t.Context()
	req, err := api.DecodeCreateRequest([]byte(`{"input":"list the files","tools":[{"type":"shell"}]}`))
	require.NoError(t, err)
	w := &lastResponse{}
	require.NoError(t, e.CreateResponse(ctx, req, w))
	got, err := e.GetResponse(ctx, w.id)
	require.NoError(t, err)
	require.Equal(t, api.ItemShellCall, got.Output[0].Type)
	require.Contains(t, string(got.Output[0].Action), `"extra":[[[`)
}
