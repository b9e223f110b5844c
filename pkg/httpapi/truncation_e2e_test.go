package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// windowedModel is a gateway whose model has a context window, set once
// a conversation is in place, and what the model got last.
type windowedModel struct {
	client    openai.Client
	setWindow func(tokens int)
	lastSent  func() string
}

// bigText is n bytes of text named by tag.
func bigText(tag string) string { return tag + strings.Repeat("x", 1000) }

// windowedModels are the gateways of the test: over the fake OpenAI
// model and over the fake Bedrock, each answering "a<n>…" (a big text).
func windowedModels(t *testing.T) map[string]windowedModel {
	llm := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: bigText(fmt.Sprint("a", req.Seq))} })
	g := newGateway(t, llm, nil)
	n := 0
	br := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn {
		n++ // the handler runs for accepted requests, one at a time here
		return fakebedrock.Turn{Text: bigText(fmt.Sprint("a", n-1))}
	})
	client := openai.NewClient(option.WithBaseURL(newBedrockGateway(t, br)+"/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return map[string]windowedModel{
		"openai": {g.client, func(n int) { llm.SetRules(fakellm.Rules{ContextWindow: n}) },
			func() string { r := llm.Requests(); return string(r[len(r)-1].Body) }},
		"bedrock": {client, br.SetContextWindow,
			func() string { r := br.Requests(); return string(r[len(r)-1].Body) }},
	}
}

// truncation "auto" through openai-go, on both providers, streamed and
// not: a continuation (previous_response_id) whose conversation has
// outgrown the model's context window, which fails with a 400
// context_length_exceeded without truncation, is answered with the
// oldest exchange left out of what the model gets — the instructions and
// the new input kept —, as one response (one response.created); the
// responses stored before, and the new one's input items, keep every
// item.
func TestTruncationAutoE2E(t *testing.T) {
	for name, m := range windowedModels(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			prev := ""
			for i := range 2 {
				p := textParams(bigText(fmt.Sprint("q", i)))
				if prev != "" {
					p.PreviousResponseID = openai.String(prev)
				}
				r, err := m.client.Responses.New(ctx, p)
				require.NoError(t, err)
				prev = r.ID
			}
			m.setWindow(1200)
			next := func() responses.ResponseNewParams {
				p := textParams(bigText("q2"))
				p.PreviousResponseID = openai.String(prev)
				p.Instructions = openai.String("Be brief.")
				return p
			}

			_, err := m.client.Responses.New(ctx, next())
			var ae *openai.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, http.StatusBadRequest, ae.StatusCode)
			require.Equal(t, "context_length_exceeded", ae.Code)

			p := next()
			p.Truncation = responses.ResponseNewParamsTruncationAuto
			r, err := m.client.Responses.New(ctx, p)
			require.NoError(t, err)
			require.Equal(t, responses.ResponseStatusCompleted, r.Status)
			require.Equal(t, responses.ResponseTruncationAuto, r.Truncation)
			requireCut(t, m.lastSent())

			evs := readSDKStream(t, m.client.Responses.NewStreaming(ctx, p))
			created := 0
			for _, e := range evs {
				if e.ev.Type == "response.created" {
					created++
				}
			}
			require.Equal(t, 1, created)
			require.Equal(t, "response.completed", evs[len(evs)-1].ev.Type)
			requireCut(t, m.lastSent())

			items, err := m.client.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{})
			require.NoError(t, err)
			require.Len(t, items.Data, 1)
			old, err := m.client.Responses.Get(ctx, prev, responses.ResponseGetParams{})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(old.OutputText(), "a1x"), old.OutputText())
		})
	}
}

// requireCut checks what the model got: the instructions, the second
// exchange and the new question, not the first exchange.
func requireCut(t *testing.T, sent string) {
	t.Helper()
	require.Contains(t, sent, "Be brief.")
	require.NotContains(t, sent, "q0x")
	require.NotContains(t, sent, "a0x")
	require.Contains(t, sent, "q1x")
	require.Contains(t, sent, "a1x")
	require.Contains(t, sent, "q2x")
}

// A stateless client's tool loop (its calls and their outputs replayed
// in input, as the Agents SDK sends them) over the window is cut before
// a whole turn, on both providers: the oldest call goes with its output,
// and each strict fake takes what is left (Bedrock's: a conversation
// starting with the user, every toolUse answered by its toolResult).
func TestTruncationAutoToolLoopE2E(t *testing.T) {
	call := func(id, output string) string {
		return fmt.Sprintf(`{"type":"function_call","call_id":"%s","name":"exec","arguments":"{}"},{"type":"function_call_output","call_id":"%[1]s","output":"%s"}`, id, output)
	}
	body := json.RawMessage(`{"truncation":"auto","tools":[{"type":"function","name":"exec","parameters":{"type":"object"}}],"input":[` +
		`{"role":"user","content":"task"},` + call("call_1", bigText("o1")) + `,` + call("call_2", bigText("o2")) + `,` + call("call_3", "small") + `]}`)
	for name, m := range windowedModels(t) {
		t.Run(name, func(t *testing.T) {
			m.setWindow(550)
			var r responses.Response
			require.NoError(t, m.client.Post(context.Background(), "responses", body, &r))
			require.Equal(t, responses.ResponseStatusCompleted, r.Status)
			sent := m.lastSent()
			require.Contains(t, sent, "task")
			require.NotContains(t, sent, "o1x")
			require.NotContains(t, sent, "call_1")
			require.Contains(t, sent, "o2x")
			require.Contains(t, sent, "small")
		})
	}
}

// truncation "auto" through openai-go: the cut a response made is
// remembered, so that a continuation of it (previous_response_id) with
// "auto" starts from it — its model call is not refused first — while
// one with "disabled" sends every item and fails with the provider's 400
// context_length_exceeded.
func TestTruncationAutoContinuationStartsCutE2E(t *testing.T) {
	t.Parallel()
	llm := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: bigText(fmt.Sprint("a", req.Seq))} })
	// refused counts the model calls the provider refused (a 4xx), which
	// fakellm does not record.
	var refused atomic.Int32
	target, err := url.Parse(llm.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(res *http.Response) error {
		if res.StatusCode == http.StatusBadRequest {
			refused.Add(1)
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	g := newGateway(t, llm, map[string]string{"LAMBENT_PROVIDER_URL": front.URL})
	ctx := context.Background()
	create := func(prev, input string, trunc responses.ResponseNewParamsTruncation) (*responses.Response, error) {
		p := textParams(input)
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		p.Truncation = trunc
		return g.client.Responses.New(ctx, p)
	}
	prev := ""
	for i := range 2 {
		r, err := create(prev, bigText(fmt.Sprint("q", i)), responses.ResponseNewParamsTruncationDisabled)
		require.NoError(t, err)
		prev = r.ID
	}
	llm.SetRules(fakellm.Rules{ContextWindow: 1200})
	cut, err := create(prev, bigText("q2"), responses.ResponseNewParamsTruncationAuto)
	require.NoError(t, err)
	require.Equal(t, int32(1), refused.Load(), "refused once, then cut")

	next, err := create(cut.ID, "q3", responses.ResponseNewParamsTruncationAuto)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, next.Status)
	require.Equal(t, int32(1), refused.Load(), "the continuation starts from the cut: not refused")
	r := llm.Requests()
	sent := string(r[len(r)-1].Body)
	require.NotContains(t, sent, "q0x")
	require.Contains(t, sent, "q2x")
	require.Contains(t, sent, "q3")

	_, err = create(next.ID, "q4", responses.ResponseNewParamsTruncationDisabled)
	var ae *openai.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, "context_length_exceeded", ae.Code, "disabled: every item sent")
	require.Equal(t, int32(2), refused.Load())
}

// truncation "auto" through openai-go over the fake OpenAI model, which
// refuses a tool message answering no call before it, as Chat Completions
// does: a client call the user abandoned for a new message gets its error
// result after that message; cut at the message, the call is dropped and
// its result with it.
func TestTruncationAutoDropsAbandonedCallE2E(t *testing.T) {
	t.Parallel()
	llm := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if last := req.Messages[len(req.Messages)-1]; strings.HasPrefix(last.Content.String(), "q0") {
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "get_weather", Arguments: `{}`}}}
		}
		return fakellm.Turn{Text: "ok"}
	})
	g := newGateway(t, llm, nil)
	ctx := context.Background()
	p := textParams(bigText("q0"))
	p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: map[string]any{"type": "object"}}}}
	first, err := g.client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "function_call", first.Output[len(first.Output)-1].Type)

	llm.SetRules(fakellm.Rules{ContextWindow: 200})
	next := textParams("never mind")
	next.PreviousResponseID = openai.String(first.ID)
	next.Tools = p.Tools
	next.Truncation = responses.ResponseNewParamsTruncationAuto
	r, err := g.client.Responses.New(ctx, next)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, r.Status)
	require.Equal(t, "ok", r.OutputText())
	reqs := llm.Requests()
	sent := string(reqs[len(reqs)-1].Body)
	require.NotContains(t, sent, "q0x")
	require.NotContains(t, sent, `"role":"tool"`)
	require.Contains(t, sent, "never mind")
}

// pageTurn is a model reading a book with the read_page tool: from the
// page the latest user message names ("from page K"), three pages, one
// call a turn, then "Read pages K to N.". It goes by the latest user
// message and the last tool result only, which a cut keeps.
func pageTurn(req fakellm.Request) fakellm.Turn {
	msgs := req.Messages
	first := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			_, from, _ := strings.Cut(msgs[i].Content.String(), "from page ")
			fmt.Sscanf(from, "%d", &first) //nolint:errcheck // no page: 0
			break
		}
	}
	next := first
	if last := msgs[len(msgs)-1]; last.Role == "tool" {
		var n int
		fmt.Sscanf(last.Content.String(), "content of page %d:", &n) //nolint:errcheck // no page: 0
		if n >= first+2 {
			return fakellm.Turn{Text: fmt.Sprintf("Read pages %d to %d.", first, n)}
		}
		next = n + 1
	}
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "read_page", Arguments: fmt.Sprintf(`{"page":%d}`, next)}}}
}

// sentAfter is the body of the model request whose last message begins
// with prefix (a tool result), "" when none.
func sentAfter(reqs []fakellm.Request, prefix string) string {
	for _, r := range reqs {
		if m := r.Messages; len(m) > 0 && strings.HasPrefix(m[len(m)-1].Content.String(), prefix) {
			return string(r.Body)
		}
	}
	return ""
}

// The OpenAI Agents SDK for JS with ModelSettings truncation "auto": an
// agent whose function tool's outputs outgrow the model's context window
// completes, run replaying its items (the oldest call cut with its output)
// and streamed as a continuation (previousResponseId, the conversation
// before it cut), one response per model turn, no error.
func TestClientAgentsSDKTruncation(t *testing.T) {
	dir := jsClients(t)
	llm := fakellm.NewHandler(pageTurn)
	llm.SetRules(fakellm.Rules{ContextWindow: 1300})
	g := newGateway(t, llm, nil)
	type run struct {
		Text      string
		Responses []string
	}
	var got struct {
		Errors        []string
		Run, Streamed *run
	}
	runJS(t, dir, "agents_truncation.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	for want, r := range map[string]*run{"Read pages 1 to 3.": got.Run, "Read pages 4 to 6.": got.Streamed} {
		require.NotNil(t, r, want)
		require.Equal(t, want, r.Text)
		require.Len(t, r.Responses, 4, "three calls and the answer")
		for i, id := range r.Responses {
			require.True(t, strings.HasPrefix(id, "resp_"), id)
			require.NotContains(t, r.Responses[:i], id)
		}
	}
	reqs := llm.Requests()
	for _, last := range []string{"content of page 3:", "content of page 6:"} {
		sent := sentAfter(reqs, last)
		require.NotEmpty(t, sent, last)
		require.NotContains(t, sent, "content of page 1:", "cut")
	}
	require.Contains(t, sentAfter(reqs, "content of page 6:"), "from page 4")
}

// The npm `openai` SDK's streamed responses.create with truncation
// "auto" and previous_response_id over a chain longer than the model's
// context window: every turn is one response (one response.created, one
// terminal event, response.completed), the later ones cut.
func TestClientOpenAITruncationStream(t *testing.T) {
	dir := jsClients(t)
	llm := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: bigText(fmt.Sprint("a", req.Seq))} })
	llm.SetRules(fakellm.Rules{ContextWindow: 1200})
	g := newGateway(t, llm, nil)
	var got struct {
		Errors []string
		Turns  []struct {
			Events                 []string
			ID, Status, Truncation string
			Error                  json.RawMessage
		}
	}
	runJS(t, dir, "openai_truncation.mjs", g.srv.URL+"/v1", &got, "5")
	require.Empty(t, got.Errors)
	require.Len(t, got.Turns, 5)
	terminal := map[string]bool{"response.completed": true, "response.failed": true, "response.incomplete": true, "error": true}
	for i, turn := range got.Turns {
		created, ends := 0, 0
		for _, e := range turn.Events {
			if e == "response.created" {
				created++
			}
			if terminal[e] {
				ends++
			}
		}
		require.Equal(t, 1, created, "turn %d: %v", i, turn.Events)
		require.Equal(t, 1, ends, "turn %d: %v", i, turn.Events)
		require.Equal(t, "response.completed", turn.Events[len(turn.Events)-1], "turn %d", i)
		require.Equal(t, "completed", turn.Status, "turn %d: %s", i, turn.Error)
		require.Equal(t, "auto", turn.Truncation)
	}
	reqs := llm.Requests()
	sent := string(reqs[len(reqs)-1].Body)
	require.NotContains(t, sent, "q0x", "cut")
	require.Contains(t, sent, "q4x")
}
