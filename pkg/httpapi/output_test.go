package httpapi_test

// Validated output (issue 14) through the official clients: openai-go and
// npm `openai`, streaming and not.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

const (
	badReport  = `{"score":-1,"summary":"bad"}`
	goodReport = `{"score":7,"summary":"a solid quarter"}`
)

// reportParameters is the output schema of these tests.
var reportParameters = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"score": map[string]any{"type": "integer", "minimum": 0}, "summary": map[string]any{"type": "string"}},
	"required":             []string{"score", "summary"},
	"additionalProperties": false,
}

// outputModel is a fake model for validated output: it gives an invalid
// report until it was told that one failed validation, then a valid one;
// as a call of the output tool "report" when it has tools (after a
// reflection, it submits), else as its answer (text.format).
func outputModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		out := badReport
		for _, m := range req.Messages {
			if strings.Contains(m.Content.String(), "failed validation") {
				out = goodReport
			}
		}
		if len(req.Tools) == 0 {
			return fakellm.Turn{Text: out}
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" && strings.HasPrefix(last.Content.String(), "Your output for report") {
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "submit", Arguments: `{}`}}}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "report", Arguments: out}}}
	})
}

// reportTool is the output tool, with reflection or not.
func reportTool(reflection bool) option.RequestOption {
	t := map[string]any{"type": "lambent:output", "name": "report", "description": "Report the assessment.", "parameters": reportParameters}
	if reflection {
		t["reflection"] = true
	}
	return option.WithJSONSet("tools", []map[string]any{t})
}

// attempts reads the response's "lambent" extension field.
func attempts(t *testing.T, raw string) []struct {
	Number int
	Valid  bool
	Code   string
	Errors []string
} {
	t.Helper()
	var w struct {
		Lambent struct {
			Attempts []struct {
				Number int
				Valid  bool
				Code   string
				Errors []string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &w))
	return w.Lambent.Attempts
}

// openai-go creates and streams validated-output responses: the failed
// attempt and the retry are in one response (one stream), the output calls
// are mcp_call items, output_text is the validated output, and the
// "lambent" field lists the attempts.
func TestE2EValidatedOutputOpenAIGo(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			g := newGateway(t, outputModel(), nil)
			ctx := context.Background()
			params := textParams("Assess the quarter.")
			var final responses.Response
			if streaming {
				evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, params, reportTool(true)))
				n := countTypes(evs)
				require.Equal(t, 1, n["response.created"])
				require.Equal(t, 1, n["response.completed"])
				// report, submit (attempt 1), report, submit (attempt 2).
				require.Equal(t, 4, n["response.mcp_call.completed"]+n["response.mcp_call.failed"])
				require.Equal(t, 1, n["response.mcp_call.failed"], "the failed submit")
				final = evs[len(evs)-1].ev.AsResponseCompleted().Response
			} else {
				r, err := g.client.Responses.New(ctx, params, reportTool(false))
				require.NoError(t, err)
				require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(r.RawJSON())))
				final = *r
			}
			require.Equal(t, responses.ResponseStatusCompleted, final.Status)
			require.JSONEq(t, goodReport, final.OutputText())
			var got struct {
				Score   int
				Summary string
			}
			require.NoError(t, json.Unmarshal([]byte(final.OutputText()), &got))
			require.Equal(t, 7, got.Score)
			for _, it := range final.Output[:len(final.Output)-1] {
				require.Equal(t, "mcp_call", it.Type)
				require.Equal(t, "lambent", it.AsMcpCall().ServerLabel)
			}
			as := attempts(t, final.RawJSON())
			require.Len(t, as, 2)
			require.Equal(t, "validation_failed", as[0].Code)
			require.Contains(t, as[0].Errors[0], "/score")
			require.True(t, as[1].Valid)
			require.Len(t, g.fake.Requests(), map[bool]int{false: 2, true: 4}[streaming])
		})
	}
}

// A validated-output failure is the response itself (HTTP 200, status
// failed, error.code validation_failed), in openai-go as in the stream.
func TestE2EValidatedOutputFailedOpenAIGo(t *testing.T) {
	t.Parallel()
	g := newGateway(t, outputModel(), nil)
	ctx := context.Background()
	once := option.WithJSONSet("lambent", map[string]any{"max_attempts": 1})
	r, err := g.client.Responses.New(ctx, textParams("Assess the quarter."), reportTool(false), once)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusFailed, r.Status)
	require.Equal(t, "validation_failed", string(r.Error.Code))
	require.Equal(t, "report", r.Output[0].AsMcpCall().Name)
	require.JSONEq(t, badReport, r.Output[0].AsMcpCall().Arguments, "the last output is kept")
	require.Len(t, attempts(t, r.RawJSON()), 1)

	evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, textParams("Assess the quarter."), reportTool(false), once))
	last := evs[len(evs)-1].ev
	require.Equal(t, "response.failed", last.Type)
	require.Equal(t, "validation_failed", string(last.AsResponseFailed().Response.Error.Code))
}

// text.format json_schema answers are validated too: the invalid first
// answer and its feedback are set aside, out of the output, so OutputText
// is the valid answer alone.
func TestE2EValidatedTextFormatOpenAIGo(t *testing.T) {
	t.Parallel()
	g := newGateway(t, outputModel(), fnItems)
	params := textParams("Assess the quarter.")
	params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "report", Description: openai.String("The assessment."), Schema: reportParameters, Strict: openai.Bool(true)},
	}}
	for _, streaming := range []bool{false, true} {
		var final responses.Response
		if streaming {
			evs := readSDKStream(t, g.client.Responses.NewStreaming(context.Background(), params))
			final = evs[len(evs)-1].ev.AsResponseCompleted().Response
		} else {
			r, err := g.client.Responses.New(context.Background(), params)
			require.NoError(t, err)
			final = *r
		}
		require.Equal(t, responses.ResponseStatusCompleted, final.Status)
		require.JSONEq(t, goodReport, final.OutputText())
		require.Len(t, final.Output, 1, "the failed answer and the feedback are set aside")
		require.Len(t, attempts(t, final.RawJSON()), 2)
	}
}

// A text.format json_schema response whose attempts ran out is failed with
// its last answer in output, in openai-go as in the stream: OutputText is
// what the model last said.
func TestE2EValidatedTextFormatFailedOpenAIGo(t *testing.T) {
	t.Parallel()
	g := newGateway(t, outputModel(), nil)
	params := textParams("Assess the quarter.")
	params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "report", Schema: reportParameters, Strict: openai.Bool(true)},
	}}
	once := option.WithJSONSet("lambent", map[string]any{"max_attempts": 1})
	r, err := g.client.Responses.New(context.Background(), params, once)
	require.NoError(t, err)
	evs := readSDKStream(t, g.client.Responses.NewStreaming(context.Background(), params, once))
	require.Equal(t, "response.failed", evs[len(evs)-1].ev.Type)
	streamed := evs[len(evs)-1].ev.AsResponseFailed().Response
	for _, final := range []responses.Response{*r, streamed} {
		require.Equal(t, responses.ResponseStatusFailed, final.Status)
		require.Equal(t, "validation_failed", string(final.Error.Code))
		require.Len(t, final.Output, 1)
		require.Equal(t, "message", final.Output[0].Type)
		require.JSONEq(t, badReport, final.OutputText(), "the last answer is kept")
	}
}

// The npm `openai` SDK: create, stream (reflection), parse (zodTextFormat)
// and a failed response all work unchanged.
func TestClientOpenAIOutput(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, outputModel(), nil)
	type attempt struct {
		Number int
		Valid  bool
		Code   string
	}
	type summary struct {
		Status, Text string
		Code         *string
		Attempts     []attempt
		Items        []string
	}
	var got struct {
		Plain    summary
		Streamed struct {
			summary
			Events []string
		}
		Parsed struct {
			summary
			Parsed *struct {
				Score   int
				Summary string
			}
		}
		Failed       summary
		FailedParsed struct {
			summary
			Parsed *struct{ Score int }
		}
		FailedStreamed summary
	}
	runJS(t, dir, "openai_output.mjs", g.srv.URL+"/v1", &got)

	require.Equal(t, "completed", got.Plain.Status)
	require.JSONEq(t, goodReport, got.Plain.Text)
	require.Equal(t, []attempt{{1, false, "validation_failed"}, {2, true, ""}}, got.Plain.Attempts)
	require.Equal(t, []string{"mcp_call:report", "mcp_call:report", "message:assistant"}, got.Plain.Items)

	require.Equal(t, "completed", got.Streamed.Status)
	require.JSONEq(t, goodReport, got.Streamed.Text)
	require.Len(t, got.Streamed.Attempts, 2)
	require.Equal(t, []string{"mcp_call:report", "mcp_call:submit", "mcp_call:report", "mcp_call:submit", "message:assistant"}, got.Streamed.Items)
	require.Contains(t, got.Streamed.Events, "response.mcp_call.failed")
	require.Equal(t, "response.completed", got.Streamed.Events[len(got.Streamed.Events)-1])

	require.Equal(t, "completed", got.Parsed.Status)
	require.NotNil(t, got.Parsed.Parsed, "output_parsed")
	require.Equal(t, 7, got.Parsed.Parsed.Score)
	require.Equal(t, "a solid quarter", got.Parsed.Parsed.Summary)
	require.Equal(t, []string{"message:assistant"}, got.Parsed.Items)

	require.Equal(t, "failed", got.Failed.Status)
	require.Equal(t, "validation_failed", *got.Failed.Code)
	require.Len(t, got.Failed.Attempts, 1)

	// Structured text whose attempts ran out: the failed response holds the
	// last answer, which responses.parse does not parse (output_parsed
	// null) and responses.stream returns as the terminal event has it.
	for name, f := range map[string]summary{"parse": got.FailedParsed.summary, "stream": got.FailedStreamed} {
		require.Equal(t, "failed", f.Status, name)
		require.Equal(t, "validation_failed", *f.Code, name)
		require.JSONEq(t, badReport, f.Text, name)
		require.Equal(t, []string{"message:assistant"}, f.Items, name)
	}
	require.Nil(t, got.FailedParsed.Parsed)
}

// Each client's own structured-output helper gets the valid object when
// the model's first json_schema answer fails validation: the failed answer
// and the feedback are not in the response's output, which holds the
// valid answer alone, as OpenAI would send it. Streamed, the failed
// answer's deltas have been sent before its verdict: the AI SDK's
// streamText joins them with the valid answer's (docs/validated-output.md).
func TestClientStructuredOutputRetried(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, outputModel(), nil)
	type report struct {
		Score   int
		Summary string
	}
	type result struct {
		Output *report
		Text   string
		Items  []string
		Error  string
	}
	var got struct {
		Errors       []string
		AIGenerate   *result
		AIStream     *result
		AgentsRun    *result
		AgentsStream *result
		OpenAIParse  *result
		OpenAIStream *result
		LangChain    *result
	}
	runJS(t, dir, "structured_output.mjs", g.srv.URL+"/v1", &got)
	want := &report{Score: 7, Summary: "a solid quarter"}
	for name, r := range map[string]*result{"AI SDK generateText": got.AIGenerate, "Agents SDK run": got.AgentsRun,
		"Agents SDK streamed run": got.AgentsStream, "openai responses.parse": got.OpenAIParse,
		"openai responses.stream": got.OpenAIStream, "LangChain withStructuredOutput": got.LangChain} {
		require.NotNil(t, r, "%s failed: %v", name, got.Errors)
		require.Equal(t, want, r.Output, name)
	}
	require.Equal(t, []string{"message:assistant"}, got.OpenAIParse.Items)
	require.Equal(t, []string{"message:assistant"}, got.OpenAIStream.Items)
	require.JSONEq(t, goodReport, got.AIGenerate.Text)
	// streamText's text joins both answers, which its output cannot parse
	// (the documented limitation).
	require.NotNil(t, got.AIStream, "%v", got.Errors)
	require.Equal(t, badReport+goodReport, got.AIStream.Text)
	require.Equal(t, "AI_NoObjectGeneratedError", got.AIStream.Error)
	require.Empty(t, got.Errors)
}

// Over a WebSocket, a json_schema answer that fails once ends with the
// valid answer alone in the terminal event's output, and a continuation
// on the socket (store: false: the connection's cache) gives the model
// that output only, not the failed answer nor the feedback.
func TestWebSocketStructuredOutputRetried(t *testing.T) {
	t.Parallel()
	g := newGateway(t, outputModel(), map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA})
	ws := dialWS(t, g.srv, wsKeyA)
	format, err := json.Marshal(map[string]any{"format": map[string]any{"type": "json_schema", "name": "report", "strict": true, "schema": reportParameters}})
	require.NoError(t, err)
	evs := ws.create(`{"type":"response.create","store":false,"input":"Assess the quarter.","text":` + string(format) + `}`)
	require.Equal(t, "response.completed", last(evs).Type)
	var done struct {
		Response struct {
			ID     string
			Output []struct{ Type, Role, ID string }
		}
	}
	require.NoError(t, json.Unmarshal(last(evs).Data, &done))
	require.Len(t, done.Response.Output, 1, "the failed answer and the feedback are set aside")
	require.Equal(t, "assistant", done.Response.Output[0].Role)
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Thanks."}`, done.Response.ID))
	require.Equal(t, "response.completed", last(evs).Type)
	reqs := g.fake.Requests()
	require.Len(t, reqs, 3)
	var got []string
	for _, m := range reqs[2].Messages {
		got = append(got, m.Role+": "+m.Content.String())
	}
	require.Equal(t, []string{"user: Assess the quarter.", "assistant: " + goodReport, "user: Thanks."}, got)
}
