package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
)

// dynamoGateway is a gateway whose store is the DynamoDB table `table` on
// DynamoDB Local, with a store client of its own (as another Lambda
// instance would have).
func dynamoGateway(t *testing.T, fake *fakellm.Server, table string) *gateway {
	t.Helper()
	return newGatewayWith(t, fake, nil, &app.Options{Store: dynamotest.NewStore(t, table)})
}

// A requires_action response created on instance A is continued on
// instance B through HTTP with the official client; B's model call sees
// A's history. GET, input_items and DELETE work from either instance.
func TestDynamoTwoInstancesContinue(t *testing.T) {
	t.Parallel()
	table := "lambent_e2e_" + api.NewID("")[24:]
	a := dynamoGateway(t, fakellm.New(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}), table)
	bFake := fakellm.New(fakellm.Turn{Text: "Snowing in Oslo."})
	b := dynamoGateway(t, bFake, table)
	ctx := context.Background()

	p := textParams("Weather in Oslo?")
	p.Instructions = openai.String("Answer briefly.")
	p.Tools = []responses.ToolUnionParam{weatherTool()}
	paused, err := a.client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatus("requires_action"), paused.Status)

	done, err := b.client.Responses.New(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(paused.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput("call_w1", "snow, -3°C")}},
		Tools:              []responses.ToolUnionParam{weatherTool()},
	})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatus("completed"), done.Status)
	require.Equal(t, "Snowing in Oslo.", done.OutputText())

	reqs := bFake.Requests()
	require.Len(t, reqs, 1)
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"user", "assistant", "tool"}, roles, "B sees A's history (without A's instructions)")
	require.Equal(t, "Weather in Oslo?", reqs[0].Messages[0].Content.String())
	require.Equal(t, "call_w1", reqs[0].Messages[1].ToolCalls[0].ID)

	got, err := a.client.Responses.Get(ctx, done.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, done.ID, got.ID)
	items, err := a.client.Responses.InputItems.List(ctx, done.ID, responses.InputItemListParams{})
	require.NoError(t, err)
	require.Len(t, items.Data, 1)
	require.NoError(t, b.client.Responses.Delete(ctx, paused.ID))
	_, err = a.client.Responses.Get(ctx, paused.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound)
}

// Two continuations of one response at once (a fork) both succeed and keep
// their own branches.
func TestDynamoForkedContinuations(t *testing.T) {
	t.Parallel()
	table := "lambent_e2e_" + api.NewID("")[24:]
	fake := fakellm.NewHandler(func(r fakellm.Request) fakellm.Turn {
		last := r.Messages[len(r.Messages)-1].Content.String()
		return fakellm.Turn{Text: "echo: " + last}
	})
	a := dynamoGateway(t, fake, table)
	b := dynamoGateway(t, fakellm.NewHandler(func(r fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: "echo: " + r.Messages[len(r.Messages)-1].Content.String()}
	}), table)
	ctx := context.Background()
	root, err := a.client.Responses.New(ctx, textParams("root"))
	require.NoError(t, err)
	var wg sync.WaitGroup
	results := make([]*responses.Response, 2)
	errs := make([]error, 2)
	for i, g := range []*gateway{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := textParams("branch " + strconv.Itoa(i))
			p.PreviousResponseID = openai.String(root.ID)
			results[i], errs[i] = g.client.Responses.New(ctx, p)
		}()
	}
	wg.Wait()
	for i := range results {
		require.NoError(t, errs[i])
		require.Equal(t, "echo: branch "+strconv.Itoa(i), results[i].OutputText())
		items, err := b.client.Responses.InputItems.List(ctx, results[i].ID, responses.InputItemListParams{})
		require.NoError(t, err)
		require.Len(t, items.Data, 1)
	}
	again, err := a.client.Responses.Get(ctx, root.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, "echo: root", again.OutputText())
}

// Background responses over HTTP on DynamoDB: queued at once, completed by
// the in-process worker, a dropped stream resumed from event N+1, and a
// running response cancelled.
func TestDynamoBackgroundOverHTTP(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fake := fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"2^10"}`}}},
		fakellm.Turn{Text: "2^10 is 1024."},
		fakellm.Turn{Text: "never", Block: release},
	)
	t.Cleanup(func() { close(release) })
	g := dynamoGateway(t, fake, "")
	ctx := context.Background()

	p := textParams("What is 2^10?")
	p.Background = openai.Bool(true)
	created, err := g.client.Responses.New(ctx, p, option.WithJSONSet("tools", []map[string]any{{"type": "lambent:calculator"}}))
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatus("queued"), created.Status)
	require.True(t, created.Background)

	var final *responses.Response
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r, err := g.client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		if r.Status == "completed" {
			final = r
			break
		}
		require.Contains(t, []responses.ResponseStatus{"queued", "in_progress"}, r.Status)
	}
	require.NotNil(t, final, "the background response did not complete")
	require.Equal(t, "2^10 is 1024.", final.OutputText())
	require.Len(t, final.Output, 2)
	call := final.Output[0].AsMcpCall()
	require.Equal(t, "mcp_call", string(call.Type))
	require.Equal(t, "lambent", call.ServerLabel)
	require.Equal(t, "1024", call.Output)

	// The whole stream, then a resumed one after event N.
	status, _, body := g.do(http.MethodGet, "/v1/responses/"+created.ID+"?stream=true", "", "")
	require.Equal(t, http.StatusOK, status)
	all, doneMark, err := ssecheck.Parse(bytes.NewReader(body))
	require.NoError(t, err)
	require.True(t, doneMark)
	require.NoError(t, ssecheck.Check(nil, all))
	require.NoError(t, ssecheck.CheckOpenAI(all))
	const n = 4
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+created.ID+"?stream=true&starting_after="+strconv.Itoa(n), "", "")
	require.Equal(t, http.StatusOK, status)
	resumed, doneMark, err := ssecheck.Parse(bytes.NewReader(body))
	require.NoError(t, err)
	require.True(t, doneMark)
	require.Len(t, resumed, len(all)-n-1)
	for i, ev := range resumed {
		require.Equal(t, all[n+1+i].Seq, ev.Seq)
		require.JSONEq(t, string(all[n+1+i].Data), string(ev.Data))
	}
	// The official client's GetStreaming resumes the same way.
	stream := g.client.Responses.GetStreaming(ctx, created.ID, responses.ResponseGetParams{StartingAfter: openai.Int(n)})
	var seqs []int64
	for stream.Next() {
		seqs = append(seqs, stream.Current().SequenceNumber)
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, int64(n+1), seqs[0])
	require.Equal(t, all[len(all)-1].Seq, seqs[len(seqs)-1])

	// Cancel a running one (its model call is held open).
	p2 := textParams("take your time")
	p2.Background = openai.Bool(true)
	running, err := g.client.Responses.New(ctx, p2)
	require.NoError(t, err)
	for deadline := time.Now().Add(30 * time.Second); fake.Calls() < 3 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	require.Equal(t, 3, fake.Calls(), "the worker is waiting on the model")
	cancelled, err := g.client.Responses.Cancel(ctx, running.ID)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatus("cancelled"), cancelled.Status)
	stored, err := g.client.Responses.Get(ctx, running.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatus("cancelled"), stored.Status)
	_, _, body = g.do(http.MethodGet, "/v1/responses/"+running.ID+"?stream=true", "", "")
	evs, _, err := ssecheck.Parse(bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, "response.cancelled", evs[len(evs)-1].Type)
}

// A response whose input carries a value nested deeper than a store can
// read back (an annotation 20,000 levels deep; encoding/json stops at
// 10,000) is refused when it is created: it was stored, and every GET,
// input_items and continuation of it was a 500 from then on.
func TestDynamoDeepAnnotationRefusedNotStoredUnreadable(t *testing.T) {
	t.Parallel()
	g := dynamoGateway(t, fakellm.New(fakellm.Turn{Text: "ok"}), "")
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	status, _, body := g.postJSON(`{"input":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[` +
		deep + `]}]},{"role":"user","content":"again"}]}`)
	if status == http.StatusOK {
		id := decodeWire(t, body).ID
		got, _, page := g.do(http.MethodGet, "/v1/responses/"+id+"/input_items", "", "")
		t.Fatalf("created, and its input_items: %d %.200s", got, page)
	}
	require.Equal(t, http.StatusBadRequest, status, "%.300s", body)
	require.Contains(t, string(body), `"param":"input[1].content[0].annotations"`)
}
