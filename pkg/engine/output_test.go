package engine

// Tests of validated output (docs/architecture.md "Validated output", issue 14): one named test per
// success criterion of the seed, through the engine with a scripted model.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reportSchema is the output tool's schema in these tests.
const reportSchema = `{"type":"object","properties":{"score":{"type":"integer","minimum":0},"summary":{"type":"string"}},"required":["score","summary"],"additionalProperties":false}`

// outputTool is a report output tool with extra fields (`"reflection":true`).
func outputTool(extra string) string {
	s := `{"type":"lambent:output","name":"report","description":"Report the result.","parameters":` + reportSchema
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const (
	validReport   = `{"score":7,"summary":"fine"}`
	invalidReport = `{"score":-1,"summary":"bad"}`
)

// lambent decodes the response's "lambent" field (of the final response or
// the terminal event).
func (r *recorder) lambent(t *testing.T) *api.LambentInfo {
	t.Helper()
	body := r.resp
	if body == nil {
		evs := r.parsed(t)
		var last struct {
			Response json.RawMessage `json:"response"`
		}
		require.NoError(t, json.Unmarshal(evs[len(evs)-1].Data, &last))
		body = last.Response
	}
	var w struct {
		Lambent *api.LambentInfo `json:"lambent"`
	}
	require.NoError(t, json.Unmarshal(body, &w))
	return w.Lambent
}

// outputText is the SDKs' output_text: the output_text parts of the
// output's messages.
func outputText(r *api.Response) string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type != api.ItemMessage {
			continue
		}
		for _, p := range it.Content {
			if p.Type == api.PartOutputText {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// lastToolResult is the last function_call_output the model was sent.
func lastToolResult(t *testing.T, req *provider.Request) api.Item {
	t.Helper()
	for i := len(req.Items) - 1; i >= 0; i-- {
		if req.Items[i].Type == api.ItemFunctionCallOutput {
			return req.Items[i]
		}
	}
	t.Fatal("no tool result in the model request")
	return api.Item{}
}

// toolResult is the result of the call callID the model was sent.
func toolResult(t *testing.T, req *provider.Request, callID string) api.Item {
	t.Helper()
	for _, it := range req.Items {
		if it.Type == api.ItemFunctionCallOutput && it.CallID == callID {
			return it
		}
	}
	t.Fatalf("no result of %s in the model request", callID)
	return api.Item{}
}

// Helper tools run and their results feed back; the output call then ends
// the attempt, the output is validated and becomes the final message.
func TestOutput_HelpersThenOutput(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "lookup")
	p := script(
		calls(10, 2, call("c1", "lookup", `{"q":"a"}`)),
		calls(20, 3, call("c2", "lookup", `{"q":"b"}`)),
		calls(30, 4, call("c3", "report", validReport)),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:lookup", "function_call_output", "function_call:lookup", "function_call_output",
		"function_call:report", "function_call_output", "message"}, types(r.Output))
	assert.Equal(t, validReport, outputText(r))
	assert.Equal(t, "Output accepted.", r.Output[5].Output)
	require.Len(t, p.requests(), 3)
	assert.Equal(t, "result of lookup "+`{"q":"a"}`, lastToolResult(t, p.requests()[1]).Output, "the helper's result fed back")
	assert.Len(t, m.calls(), 2)
	// The model saw the output tool as an ordinary function.
	var names []string
	for _, d := range p.requests()[0].Tools {
		names = append(names, d.Name)
	}
	assert.Equal(t, []string{"lookup", "report"}, names)
	info := rec.lambent(t)
	require.NotNil(t, info)
	require.Len(t, info.Attempts, 1)
	a := info.Attempts[0]
	assert.True(t, a.Valid)
	assert.Equal(t, 1, a.Number)
	assert.Equal(t, 3, a.Iterations)
	assert.Empty(t, a.Errors)
	assert.Equal(t, 60, a.Usage.InputTokens)
}

// With reflection each output call returns the reflection to the model,
// which may call the output tool again; submit ends the iterations with the
// last output.
func TestOutput_ReflectionOutputsThenSubmit(t *testing.T) {
	t.Parallel()
	p := script(
		calls(1, 1, call("c1", "report", `{"score":3,"summary":"draft"}`)),
		calls(1, 1, call("c2", "report", validReport)),
		calls(1, 1, call("c3", "submit", `{}`)),
	)
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool(`"reflection":true`)+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, validReport, outputText(r), "the last output was submitted")
	require.Len(t, p.requests(), 3)
	// submit was added to the model's tools with its default definition.
	var submit *api.ToolDefinition
	for i, d := range p.requests()[0].Tools {
		if d.Name == api.SubmitTool {
			submit = &p.requests()[0].Tools[i]
		}
	}
	require.NotNil(t, submit)
	assert.Equal(t, "Submit your final output for validation. Call this when you are satisfied with your output.", submit.Description)
	assert.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, string(submit.Parameters))
	// Each output call's result is the default reflection of that output.
	first := lastToolResult(t, p.requests()[1])
	assert.Contains(t, first.Output, `"summary": "draft"`)
	assert.Contains(t, first.Output, "call submit")
	assert.False(t, first.IsError)
	assert.Contains(t, lastToolResult(t, p.requests()[2]).Output, `"summary": "fine"`)
	assert.Equal(t, []string{"function_call:report", "function_call_output", "function_call:report", "function_call_output",
		"function_call:submit", "function_call_output", "message"}, types(r.Output))
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 1)
	assert.Equal(t, 3, info.Attempts[0].Iterations)
	// The echoed tools show report and submit as the functions the model saw.
	var echoed []string
	for _, tl := range e.mustGet(t, r.ID).Tools {
		echoed = append(echoed, tl.Type+":"+tl.Name)
	}
	assert.Equal(t, []string{"function:report", "function:submit"}, echoed)
}

func (e *Engine) mustGet(t *testing.T, id string) *api.Response {
	t.Helper()
	r, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	return r
}

// Without reflection the output call ends the iterations at once: the
// turn's other calls still run, in order, and the last output call wins.
func TestOutput_WithoutReflectionEndsAtOnce(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "lookup")
	p := script(calls(1, 1,
		call("c1", "lookup", `{"q":"a"}`),
		call("c2", "report", invalidReport),
		call("c3", "lookup", `{"q":"b"}`),
		call("c4", "report", validReport),
	), text("never asked", 1, 1))
	e, _ := newEngine(t, p, m, func(c *Config) { c.Loop.HostedToolItems = HostedItemsFunctionCall })
	rec, err := run1(t, e, `{"input":"assess","parallel_tool_calls":false,"tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Len(t, p.requests(), 1, "no model call after the output call")
	require.Len(t, m.calls(), 2)
	assert.Equal(t, `{"q":"a"}`, m.calls()[0].Arguments)
	assert.Equal(t, `{"q":"b"}`, m.calls()[1].Arguments)
	assert.Equal(t, validReport, outputText(r), "the last output call won")
	results := map[string]api.Item{}
	for _, it := range r.Output {
		if it.Type == api.ItemFunctionCallOutput {
			results[it.CallID] = it
		}
	}
	assert.Contains(t, results["c2"].Output, "Superseded")
	assert.Equal(t, "Output accepted.", results["c4"].Output)
}

// Submit before any output fails the attempt with submit_before_output,
// told to the model as submit's result; the next attempt succeeds.
func TestOutput_SubmitBeforeOutput(t *testing.T) {
	t.Parallel()
	p := script(
		calls(1, 1, call("c1", "submit", `{}`)),
		calls(1, 1, call("c2", "report", validReport)),
		calls(1, 1, call("c3", "submit", `{}`)),
	)
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool(`"reflection":true`)+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	fb := lastToolResult(t, p.requests()[1])
	assert.True(t, fb.IsError)
	assert.Contains(t, fb.Output, "submit was called before report")
	assert.Contains(t, fb.Output, "Attempt 1 of 3 failed")
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.CodeSubmitBeforeOutput, info.Attempts[0].Code)
	assert.False(t, info.Attempts[0].Valid)
	assert.NotEmpty(t, info.Attempts[0].Errors)
	assert.True(t, info.Attempts[1].Valid)
	assert.Equal(t, 2, info.Attempts[1].Iterations)
}

// An answer without the output call fails the attempt with
// invalid_response; the feedback is a user message and the model then
// calls the output tool.
func TestOutput_NoOutputCall(t *testing.T) {
	t.Parallel()
	p := script(text("Here is my report: all fine.", 1, 1), calls(1, 1, call("c1", "report", validReport)))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	// The failed answer and the feedback are set aside: out of the output,
	// whose output_text is the output alone.
	assert.Equal(t, []string{"function_call:report", "function_call_output", "message"}, types(r.Output))
	assert.Equal(t, validReport, outputText(r))
	// The model saw its answer and the feedback.
	items := p.requests()[1].Items
	require.Equal(t, []string{"user", "assistant", "user"}, fieldOf(items, role))
	assert.Equal(t, "Here is my report: all fine.", items[1].Text())
	assert.Contains(t, items[2].Text(), "did not call report")
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.CodeInvalidResponse, info.Attempts[0].Code)
	assert.True(t, info.Attempts[1].Valid)
}

// An attempt that exceeds its iterations fails the response with
// max_iterations, without validation.
func TestOutput_IterationLimit(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "lookup")
	p := script(
		calls(1, 1, call("c1", "lookup", `{}`)),
		calls(1, 1, call("c2", "lookup", `{}`)),
		calls(1, 1, call("c3", "report", validReport)),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","lambent":{"max_iterations_per_attempt":2},"tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`)
	require.NoError(t, err, "a validated-output failure is the response itself")
	r := rec.response(t)
	assert.Equal(t, api.StatusFailed, r.Status)
	require.NotNil(t, r.Error)
	assert.Equal(t, api.CodeMaxIterations, r.Error.Code)
	assert.Len(t, p.requests(), 2)
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 1)
	assert.Equal(t, api.CodeMaxIterations, info.Attempts[0].Code)
	assert.Equal(t, 2, info.Attempts[0].Iterations)
	assert.Equal(t, 2, r.Usage.InputTokens)
}

// Helper and reflection handler errors are fed back as error results, never
// a failed response.
func TestOutput_HandlerError(t *testing.T) {
	t.Parallel()
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		switch c.Name {
		case "lookup":
			return nil, errors.New("backend down")
		case "review":
			return &tools.ToolResult{Output: "review crashed", IsError: true}, nil
		}
		return nil, errors.New("unexpected")
	}, "lookup", "review")
	p := script(
		calls(1, 1, call("c1", "lookup", `{}`)),
		calls(1, 1, call("c2", "report", validReport)),
		calls(1, 1, call("c3", "submit", `{}`)),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","tools":[{"type":"lambent:lookup"},`+outputTool(`"reflection":"lambent:review"`)+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	helper := lastToolResult(t, p.requests()[1])
	assert.True(t, helper.IsError)
	assert.Equal(t, "Error: backend down", helper.Output)
	refl := lastToolResult(t, p.requests()[2])
	assert.True(t, refl.IsError)
	assert.Equal(t, "review crashed", refl.Output)
	// The reflection tool got the output as {"output": …}.
	var got []string
	for _, c := range m.calls() {
		if c.Name == "review" {
			got = append(got, c.Arguments)
		}
	}
	assert.Equal(t, []string{`{"output":` + validReport + `}`}, got)
	assert.Equal(t, validReport, outputText(r))
}

// A call of an unknown tool is fed back with an error; the loop goes on.
func TestOutput_UnknownTool(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("c1", "nope", `{}`)), calls(1, 1, call("c2", "report", validReport)))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	res := lastToolResult(t, p.requests()[1])
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, `tool "nope" does not exist`)
	assert.Contains(t, res.Output, "report")
}

// A validator tool rejects the first output: the attempt fails with the
// validator's errors, the model is told exactly what failed, and attempt 2
// passes the schema and the validator.
func TestOutput_ValidatorFailsThenSucceeds(t *testing.T) {
	t.Parallel()
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		var in struct {
			Output struct {
				Score int `json:"score"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
			return nil, err
		}
		if in.Output.Score < 5 {
			return &tools.ToolResult{Output: `{"valid":false,"errors":["score must be at least 5 for this task"]}`}, nil
		}
		return &tools.ToolResult{Output: `{"valid":true,"errors":[]}`}, nil
	}, "check_report")
	p := script(
		calls(1, 1, call("c1", "report", `{"score":2,"summary":"low"}`)),
		calls(1, 1, call("c2", "report", validReport)),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool(`"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, validReport, outputText(r))
	fb := toolResult(t, p.requests()[1], "c1")
	assert.True(t, fb.IsError)
	assert.Contains(t, fb.Output, "check_report: score must be at least 5 for this task")
	assert.Contains(t, fb.Output, "Attempt 1 of 3 failed")
	assert.Len(t, m.calls(), 2, "the validator ran once per attempt")
	// The validator calls are server calls in output.
	assert.Equal(t, []string{"function_call:report", "function_call_output", "function_call:check_report", "function_call_output",
		"function_call:report", "function_call_output", "function_call:check_report", "function_call_output", "message"}, types(r.Output))
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.CodeValidationFailed, info.Attempts[0].Code)
	assert.Equal(t, []string{"check_report: score must be at least 5 for this task"}, info.Attempts[0].Errors)
	assert.True(t, info.Attempts[1].Valid)
}

// The schema is checked before the validators, which only see output that
// matches it; its errors name the failing place.
func TestOutput_SchemaErrorsBeforeValidators(t *testing.T) {
	t.Parallel()
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: `{"valid":true}`}, nil
	}, "check_report")
	p := script(calls(1, 1, call("c1", "report", invalidReport)), calls(1, 1, call("c2", "report", validReport)))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool(`"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	require.Len(t, info.Attempts[0].Errors, 1)
	assert.Contains(t, info.Attempts[0].Errors[0], "at '/score'")
	assert.Len(t, m.calls(), 1, "the validator did not see the invalid output")
}

// After max_attempts failed attempts the response fails with
// validation_failed and the last errors; the last output stays in output.
func TestOutput_AttemptsExhausted(t *testing.T) {
	t.Parallel()
	p := script(
		calls(1, 1, call("c1", "report", invalidReport)),
		calls(1, 1, call("c2", "report", `{"score":-2,"summary":"worse"}`)),
	)
	e, st := newEngine(t, p, newMock(echoTool), func(c *Config) { c.Loop.MaxAttempts = 2 })
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusFailed, r.Status)
	require.NotNil(t, r.Error)
	assert.Equal(t, api.CodeValidationFailed, r.Error.Code)
	assert.Contains(t, r.Error.Message, "at '/score'")
	assert.Len(t, p.requests(), 2, "the gateway default of 2 attempts")
	last := r.Output[len(r.Output)-2]
	assert.Equal(t, `{"score":-2,"summary":"worse"}`, last.Arguments, "the last output is kept")
	assert.Contains(t, r.Output[len(r.Output)-1].Output, "No attempts are left")
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	for _, a := range info.Attempts {
		assert.False(t, a.Valid)
		assert.Equal(t, api.CodeValidationFailed, a.Code)
	}
	stored, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusFailed, stored.Response.Status)
	require.NotNil(t, stored.Response.Lambent)
	assert.Len(t, stored.Response.Lambent.Attempts, 2)
}

// A structured-text response whose attempts ran out fails with the last
// answer kept in its output, as the last output call is: what the model
// last said, for whoever debugs it (clients parse no failed response). The
// earlier answers and their feedback stay set aside.
func TestOutput_FailedKeepsLastAnswer(t *testing.T) {
	t.Parallel()
	last := `{"score":-2,"summary":"worse"}`
	p := script(text(invalidReport, 1, 1), text(last, 1, 1))
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Loop.MaxAttempts = 2 })
	rec, err := run1(t, e, `{"input":"assess",`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	r := rec.response(t)
	require.Equal(t, api.StatusFailed, r.Status)
	assert.Equal(t, api.CodeValidationFailed, r.Error.Code)
	require.Equal(t, []string{"message"}, types(r.Output))
	assert.Equal(t, api.RoleAssistant, r.Output[0].Role)
	assert.Equal(t, last, outputText(r), "the last answer is kept")
	b, err := json.Marshal(e.mustGet(t, r.ID))
	require.NoError(t, err)
	assert.Equal(t, last, outputText(decodeResponse(t, b)), "so is the stored response's")

	// With an output tool, an answer that did not call it, last.
	p2 := script(text("All fine.", 1, 1))
	e2, _ := newEngine(t, p2, newMock(echoTool), func(c *Config) { c.Loop.MaxAttempts = 1 })
	rec2, err := run1(t, e2, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	r2 := rec2.response(t)
	require.Equal(t, api.StatusFailed, r2.Status)
	assert.Equal(t, api.CodeInvalidResponse, r2.Error.Code)
	assert.Equal(t, "All fine.", outputText(r2))
}

// Usage sums every iteration of every attempt; each attempt has its own.
func TestOutput_TokensAcrossIterationsAndAttempts(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "lookup")
	p := script(
		calls(100, 10, call("c1", "lookup", `{}`)),
		calls(200, 20, call("c2", "report", invalidReport)),
		calls(300, 30, call("c3", "lookup", `{}`)),
		calls(400, 40, call("c4", "report", validReport)),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, 1000, r.Usage.InputTokens)
	assert.Equal(t, 100, r.Usage.OutputTokens)
	assert.Equal(t, 1100, r.Usage.TotalTokens)
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.Usage{InputTokens: 300, OutputTokens: 30, TotalTokens: 330}, info.Attempts[0].Usage)
	assert.Equal(t, api.Usage{InputTokens: 700, OutputTokens: 70, TotalTokens: 770}, info.Attempts[1].Usage)
	assert.Equal(t, 2, info.Attempts[0].Iterations)
	assert.Equal(t, 2, info.Attempts[1].Iterations)
}

// A cancellation during an iteration's tool call stops before the next
// model call; the response says where it stopped (phase "iteration").
func TestOutput_CancelledMidIteration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}, "lookup")
	p := script(
		calls(1, 1, call("c1", "report", invalidReport)),
		calls(1, 1, call("c2", "lookup", `{}`)),
		calls(1, 1, call("c3", "report", validReport)),
	)
	e, st := newEngine(t, p, m)
	rec := &recorder{}
	err := e.CreateResponse(ctx, decodeReq(t, `{"input":"assess","stream":true,"tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`), rec)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCancelled, r.Status)
	assert.Len(t, p.requests(), 2, "no model call after the cancellation")
	info := rec.lambent(t)
	require.NotNil(t, info.Cancelled)
	assert.Equal(t, api.Cancellation{Phase: "iteration", Attempt: 2, Iteration: 1}, *info.Cancelled)
	stored, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, stored.Response.Status)
	assert.Equal(t, "iteration", stored.Response.Lambent.Cancelled.Phase)
}

// text.format json_schema validates the final message the same way: an
// answer that does not match is fed back and answered again.
func TestOutput_TextFormatJSONSchema(t *testing.T) {
	t.Parallel()
	p := script(text(`{"score":"high"}`, 1, 1), text(validReport, 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"assess","text":{"format":{"type":"json_schema","name":"report","description":"the report","strict":true,"schema":`+reportSchema+`}}}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	// The output is the valid answer alone, as OpenAI would send it: the
	// failed answer and the feedback are set aside.
	assert.Equal(t, []string{"message"}, types(r.Output))
	assert.Equal(t, validReport, r.Output[0].Text())
	assert.Empty(t, r.Output[0].Phase)
	assert.Equal(t, validReport, outputText(r), "output_text is the validated answer alone")
	require.Len(t, p.requests(), 2)
	assert.NotNil(t, p.requests()[1].Text, "the format still reaches the model")
	// Attempt 2's model call saw the failed answer and the feedback.
	items := p.requests()[1].Items
	require.Equal(t, []string{"user", "assistant", "user"}, fieldOf(items, role))
	assert.Equal(t, `{"score":"high"}`, items[1].Text())
	assert.Contains(t, items[2].Text(), "at '/score'")
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.CodeValidationFailed, info.Attempts[0].Code)
	assert.True(t, info.Attempts[1].Valid)
	// So is the stored response (GET).
	stored, err := json.Marshal(e.mustGet(t, r.ID))
	require.NoError(t, err)
	assert.Equal(t, []string{"message"}, types(decodeResponse(t, stored).Output))
}

// jsonSchemaFormat is a request's text.format json_schema of the report.
const jsonSchemaFormat = `"text":{"format":{"type":"json_schema","name":"report","strict":true,"schema":` + reportSchema + `}}`

// A continuation of a validated response sees its output only, as it would
// at OpenAI: not the failed answer nor the feedback.
func TestOutput_ContinuationSeesOutputOnly(t *testing.T) {
	t.Parallel()
	p := script(text(invalidReport, 1, 1), text(validReport, 1, 1), text("You are welcome.", 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"assess",`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusCompleted, first.Status)
	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":"thanks"}`)
	require.NoError(t, err)
	require.Len(t, p.requests(), 3)
	items := p.requests()[2].Items
	require.Equal(t, []string{"user", "assistant", "user"}, fieldOf(items, role))
	assert.Equal(t, validReport, items[1].Text())
	assert.Equal(t, "thanks", items[2].Text())
}

// A conversation gets the response's output only: the failed answer and
// the feedback are not its items.
func TestOutput_ConversationGetsOutputOnly(t *testing.T) {
	t.Parallel()
	p := script(text(invalidReport, 1, 1), text(validReport, 1, 1))
	e, _ := newEngine(t, p, nil)
	conv, err := e.CreateConversation(context.Background(), &api.ConversationCreateRequest{})
	require.NoError(t, err)
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":"assess",`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	list, err := e.ListConversationItems(context.Background(), conv.ID, api.ListOptions{Limit: 100, Order: "asc"})
	require.NoError(t, err)
	require.Equal(t, []string{"user", "assistant"}, fieldOf(list.Data, role))
	assert.Equal(t, validReport, list.Data[1].Text())
}

// Streamed, a failed answer and its feedback have their events as they
// happen (they are sent before the verdict is known), at the output_index
// clients count them at; the terminal event's output is the valid answer
// alone, the item streamed last.
func TestOutput_StreamTerminalOutputIsClean(t *testing.T) {
	t.Parallel()
	p := script(text(invalidReport, 1, 1), text(validReport, 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"assess","stream":true,`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	require.NoError(t, ssecheck.CheckOpenAI(rec.parsed(t)))
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Equal(t, []string{"message"}, types(r.Output))
	assert.Equal(t, validReport, r.Output[0].Text())
	var added []string
	for _, ev := range rec.parsed(t) {
		if ev.Type == api.EventOutputItemAdded {
			added = append(added, ev.Item.ID)
		}
	}
	require.Len(t, added, 3, "the failed answer, the feedback, the valid answer")
	assert.Equal(t, added[2], r.Output[0].ID)
}

// A refusal of structured text (text.format json_schema) is the answer, as
// at OpenAI: the response completes with the refusal, one model call,
// not a failed attempt fed back until the attempts run out.
func TestOutput_TextFormatRefusalIsTheAnswer(t *testing.T) {
	t.Parallel()
	refusal := step{res: provider.Result{Refusal: "I can't help with that.", FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 1, OutputTokens: 1}}}
	p := script(text("not json", 1, 1), refusal, text(validReport, 1, 1))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"assess","text":{"format":{"type":"json_schema","name":"report","strict":true,"schema":`+reportSchema+`}}}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Nil(t, r.Error)
	assert.Len(t, p.requests(), 2, "the refusal is not asked again")
	require.Equal(t, []string{"message"}, types(r.Output), "the failed answer and its feedback are set aside")
	last := r.Output[0]
	assert.Empty(t, last.Phase)
	require.Len(t, last.Content, 1)
	assert.Equal(t, api.PartRefusal, last.Content[0].Type)
	assert.Equal(t, "I can't help with that.", last.Content[0].Refusal)
	assert.Empty(t, outputText(r))
	info := rec.lambent(t)
	require.Len(t, info.Attempts, 2)
	assert.Equal(t, api.CodeValidationFailed, info.Attempts[0].Code)
	assert.False(t, info.Attempts[1].Valid, "a refusal is not a valid output")
	assert.Empty(t, info.Attempts[1].Code)
	assert.Equal(t, 2, r.Usage.InputTokens)
}

// Responses without validated output carry no attempts in their
// "lambent" field: only its timing.
func TestOutput_NoAttemptsOtherwise(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, script(text("hi", 1, 1)), nil)
	rec, err := run1(t, e, `{"input":"x"}`)
	require.NoError(t, err)
	info := rec.lambent(t)
	require.NotNil(t, info)
	assert.Nil(t, info.Attempts)
	assert.NotNil(t, info.Timing)
}

// One stream carries every attempt's items as they happen (function_call
// mode: checked against the OpenResponses schema).
func TestOutput_StreamAcrossAttempts(t *testing.T) {
	t.Parallel()
	p := script(
		calls(1, 1, call("c1", "report", invalidReport)),
		text("oops", 1, 1),
		calls(1, 1, call("c3", "report", validReport)),
	)
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","stream":true,"tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	// The invalid answer ("oops") and its feedback streamed, then were set
	// aside: the terminal event's output leaves them out.
	assert.Equal(t, []string{"function_call:report", "function_call_output", "function_call:report", "function_call_output", "message"}, types(r.Output))
	ts := rec.types(t)
	assert.Equal(t, "response.created", ts[0])
	assert.Equal(t, "response.completed", ts[len(ts)-1])
	n := 0
	for _, typ := range ts {
		if typ == api.EventResponseCreated {
			n++
		}
	}
	assert.Equal(t, 1, n, "one stream")
	info := rec.lambent(t)
	assert.Len(t, info.Attempts, 3)
	// The final message streams like model text: its deltas are the output.
	// It streamed at output_index 6, after the set-aside items.
	var final strings.Builder
	for _, ev := range rec.parsed(t) {
		if ev.Type == api.EventOutputItemAdded {
			assert.Equal(t, ev.Item.ID == r.Output[len(r.Output)-1].ID, *ev.OutputIndex == 6)
		}
		if ev.Type == api.EventOutputTextDelta && ev.OutputIndex != nil && *ev.OutputIndex == 6 {
			var d struct{ Delta string }
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			final.WriteString(d.Delta)
		}
	}
	assert.Equal(t, validReport, final.String())
}

// In the default mcp_call mode the output, submit and validator calls are
// mcp_call items (server_label "lambent"), streamed with OpenAI's events;
// the model still sees ordinary function calls.
func TestOutput_MCPCallItems(t *testing.T) {
	t.Parallel()
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: `{"valid":true,"errors":[]}`}, nil
	}, "check_report")
	p := script(
		calls(1, 1, call("c1", "report", validReport)),
		calls(1, 1, call("c2", "submit", `{}`)),
	)
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"assess","stream":true,"tools":[`+outputTool(`"reflection":true,"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Len(t, r.Output, 4)
	for i, name := range []string{"report", "submit", "check_report"} {
		it := r.Output[i]
		assert.Equal(t, api.ItemMCPCall, it.Type)
		assert.Equal(t, api.HostedServerLabel, it.ServerLabel)
		assert.Equal(t, name, it.Name)
		assert.Equal(t, api.ItemCompleted, it.Status)
	}
	assert.Equal(t, "Output accepted.", r.Output[1].Output)
	assert.JSONEq(t, `{"valid":true,"errors":[]}`, r.Output[2].Output)
	assert.Equal(t, validReport, outputText(r))
	second := p.requests()[1].Items
	assert.Equal(t, api.ItemFunctionCall, second[1].Type)
	assert.Equal(t, "report", second[1].Name)
	assert.Equal(t, api.ItemFunctionCallOutput, second[2].Type)
	// The echoed tools name report and submit in the lambent MCP entry.
	var allowed []string
	for _, tl := range e.mustGet(t, r.ID).Tools {
		if tl.Type == api.ToolMCP {
			require.NoError(t, json.Unmarshal(tl.AllowedTools, &allowed))
		}
	}
	assert.Equal(t, []string{"report", "submit"}, allowed)
}

// A stored validated response is continuable: the next response's model
// sees the output call, its result and the final message.
func TestOutput_ContinuationSeesConversation(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("c1", "report", validReport)), text("It scored 7.", 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	first := rec.response(t)
	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`","input":"what score?"}`)
	require.NoError(t, err)
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	items := p.requests()[1].Items
	require.Len(t, items, 5)
	assert.Equal(t, "report", items[1].Name)
	assert.Equal(t, "Output accepted.", items[2].Output)
	assert.Equal(t, validReport, items[3].Text())
	assert.Nil(t, rec2.lambent(t).Attempts)
}

// Request errors of validated output are 400s naming the parameter.
func TestOutput_RequestErrors(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, script(), newMock(echoTool, "check", "lookup"))
	single, _ := newEngine(t, script(), nil)
	out := outputTool("")
	cases := []struct {
		name, body, param string
		eng               *Engine
	}{
		{"two output tools", `{"input":"x","tools":[` + out + `,{"type":"lambent:output","name":"other","parameters":{}}]}`, "tools[1]", e},
		{"submit without reflection", `{"input":"x","tools":[` + out + `,{"type":"function","name":"submit"}]}`, "tools", e},
		{"submit next to reflection", `{"input":"x","tools":[` + outputTool(`"reflection":true`) + `,{"type":"function","name":"submit"}]}`, "tools", e},
		{"output named submit", `{"input":"x","tools":[{"type":"lambent:output","name":"submit","parameters":{}}]}`, "tools[0].name", e},
		{"no parameters", `{"input":"x","tools":[{"type":"lambent:output","name":"r"}]}`, "tools[0].parameters", e},
		{"bad reflection", `{"input":"x","tools":[` + outputTool(`"reflection":"review"`) + `]}`, "tools[0].reflection", e},
		{"bad validator", `{"input":"x","tools":[` + outputTool(`"validators":["check"]`) + `]}`, "tools[0].validators[0]", e},
		{"unknown validator", `{"input":"x","tools":[` + outputTool(`"validators":["lambent:missing"]`) + `]}`, "tools[0].validators[0]", e},
		{"unknown reflection tool", `{"input":"x","tools":[` + outputTool(`"reflection":"lambent:missing"`) + `]}`, "tools[0].reflection", e},
		{"with json_schema", `{"input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{}}},"tools":[` + out + `]}`, "text.format", e},
		{"policy without output", `{"input":"x","lambent":{"max_attempts":2}}`, "lambent", e},
		{"attempts bound", `{"input":"x","lambent":{"max_attempts":0},"tools":[` + out + `]}`, "lambent.max_attempts", e},
		{"iterations bound", `{"input":"x","lambent":{"max_iterations_per_attempt":101},"tools":[` + out + `]}`, "lambent.max_iterations_per_attempt", e},
		{"unknown policy field", `{"input":"x","lambent":{"max_turns":2},"tools":[` + out + `]}`, "lambent", e},
		{"tool_choice none", `{"input":"x","tool_choice":"none","tools":[` + out + `]}`, "tool_choice", e},
		{"allowed tools without output", `{"input":"x","allowed_tools":["lookup"],"tools":[{"type":"lambent:lookup"},` + out + `]}`, "allowed_tools", e},
		{"allowed tools without submit", `{"input":"x","allowed_tools":["report"],"tools":[` + outputTool(`"reflection":true`) + `]}`, "allowed_tools", e},
		{"invalid schema", `{"input":"x","tools":[{"type":"lambent:output","name":"r","parameters":{"type":"nope"}}]}`, "tools[0].parameters", e},
		{"file reference", `{"input":"x","tools":[{"type":"lambent:output","name":"r","parameters":{"$ref":"file:///etc/passwd"}}]}`, "tools[0].parameters", e},
		{"remote reference", `{"input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{"$ref":"https://example.com/s.json"}}}}`, "text.format.schema", e},
		{"single-shot gateway", `{"input":"x","tools":[` + out + `]}`, "tools[0].type", single},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := api.DecodeCreateRequest([]byte(c.body))
			if err == nil {
				err = c.eng.CreateResponse(context.Background(), req, &recorder{})
			}
			var ae *api.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, 400, ae.Status, ae.Message)
			assert.Equal(t, c.param, ae.Param, ae.Message)
		})
	}
	// Allowed lists that keep the output tool and submit are fine.
	p := script(calls(1, 1, call("c1", "report", validReport)), calls(1, 1, call("c2", "submit", `{}`)))
	ok, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, ok, `{"input":"x","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"report"},{"type":"function","name":"submit"}]},"tools":[`+outputTool(`"reflection":true`)+`]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, rec.response(t).Status)
	// With an output tool, "required" holds for every model call.
	for _, q := range p.requests() {
		assert.Equal(t, api.ToolChoiceRequired, q.ToolChoice)
	}
}

// The loop policy comes from the request, else from the gateway's config.
func TestOutput_LoopPolicy(t *testing.T) {
	t.Parallel()
	bad := func(n int) []step {
		var s []step
		for i := 0; i < n; i++ {
			s = append(s, calls(1, 1, call("c", "report", invalidReport)))
		}
		return s
	}
	p := script(bad(5)...)
	e, _ := newEngine(t, p, newMock(echoTool), func(c *Config) { c.Loop.MaxAttempts = 5 })
	rec, err := run1(t, e, `{"input":"x","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	assert.Len(t, rec.lambent(t).Attempts, 5, "LAMBENT_MAX_ATTEMPTS")
	p2 := script(bad(5)...)
	e2, _ := newEngine(t, p2, newMock(echoTool), func(c *Config) { c.Loop.MaxAttempts = 5 })
	rec2, err := run1(t, e2, `{"input":"x","lambent":{"max_attempts":1},"tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	assert.Len(t, rec2.lambent(t).Attempts, 1, "the request's max_attempts")
	assert.Len(t, p2.requests(), 1)
	// The defaults.
	d, _ := newEngine(t, script(), nil)
	assert.Equal(t, 3, d.cfg.Loop.MaxAttempts)
	assert.Equal(t, 15, d.cfg.Loop.MaxIterationsPerAttempt)
}

// A background response keeps its attempt across the deadline hand-off:
// the continuation resumes the attempt (iterations, last output) from the
// checkpoint and submits the output produced before it.
func TestOutput_BackgroundHandOff(t *testing.T) { forStores(t, testOutputBackgroundHandOff) }

func testOutputBackgroundHandOff(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	slow := clock.taking(15 * time.Minute)
	m := newMock(echoTool, "lookup")
	p := script(
		slow(calls(10, 1, call("c1", "report", invalidReport))),
		slow(calls(10, 1, call("c2", "submit", `{}`))),
		slow(calls(10, 1, call("c3", "report", validReport))),
		slow(calls(10, 1, call("c4", "lookup", `{}`))),
		slow(calls(10, 1, call("c5", "submit", `{}`))),
	)
	e, _, q := bgEngine(t, mk, p, m, func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"input":"assess","background":true,"tools":[{"type":"lambent:lookup"},`+outputTool(`"reflection":true`)+`]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	assert.Equal(t, 3, runInvocations(t, e, q, clock))
	got := e.mustGet(t, id)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, validReport, outputText(got))
	require.NotNil(t, got.Lambent)
	require.Len(t, got.Lambent.Attempts, 2)
	assert.Equal(t, api.CodeValidationFailed, got.Lambent.Attempts[0].Code)
	assert.Equal(t, 2, got.Lambent.Attempts[0].Iterations)
	assert.True(t, got.Lambent.Attempts[1].Valid)
	assert.Equal(t, 3, got.Lambent.Attempts[1].Iterations, "the attempt spanned invocations")
	assert.Equal(t, 50, got.Usage.InputTokens)
	// The stored events replay as one stream across attempts and invocations.
	raw := &rawRecorder{}
	require.NoError(t, e.StreamResponse(context.Background(), id, -1, raw))
	final := raw.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, final.Status)
}

// Text the model writes next to its calls is set aside: output_text is
// the validated output alone.
func TestOutput_TextNextToCallsIsSetAside(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "lookup")
	withText := func(s step, text string) step {
		s.res.Text = text
		return s
	}
	p := script(
		withText(calls(1, 1, call("c1", "lookup", `{}`)), "Let me look that up."),
		withText(calls(1, 1, call("c2", "report", validReport)), "Here is the report."),
	)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"assess","stream":true,"tools":[{"type":"lambent:lookup"},`+outputTool("")+`]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, validReport, outputText(r))
	assert.Equal(t, []string{"function_call:lookup", "function_call_output", "function_call:report", "function_call_output", "message"}, types(r.Output))
	// The model still sees its own words.
	assert.Equal(t, "Let me look that up.", p.requests()[1].Items[1].Text())
}

// A response that stopped at the deadline with submit pending is continued
// (previous_response_id, no input): the pending submit validates the output
// the stopped response produced.
func TestOutput_DeadlineContinuationSubmits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testOutput_DeadlineContinuationSubmits)
}

func testOutput_DeadlineContinuationSubmits(t *testing.T) {
	slow := func(s step) step {
		s.hook = func(context.Context) { time.Sleep(30 * time.Minute) }
		return s
	}
	// Every model call and tool call takes 30 minutes.
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		time.Sleep(30 * time.Minute)
		if c.Name == "review" {
			return &tools.ToolResult{Output: "looks fine"}, nil
		}
		return &tools.ToolResult{Output: `{"valid":true,"errors":[]}`}, nil
	}, "check_report", "review")
	p := script(slow(calls(1, 1, call("c1", "report", validReport))), slow(calls(1, 1, call("c2", "submit", `{}`))))
	e, _ := newEngine(t, p, m)
	tl := `"tools":[` + outputTool(`"reflection":"lambent:review","validators":["lambent:check_report"]`) + `]`
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(100*time.Minute))
	defer cancel()
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"assess",`+tl+`}`), rec))
	first := rec.response(t)
	require.Equal(t, api.StatusIncomplete, first.Status)
	require.Equal(t, api.ReasonDeadline, first.IncompleteDetails.Reason)
	require.Len(t, m.calls(), 1, "the reflection ran, the validation did not start")

	ctx2, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(3*time.Hour))
	defer cancel2()
	rec2 := &recorder{}
	require.NoError(t, e.CreateResponse(ctx2, decodeReq(t, `{"previous_response_id":"`+first.ID+`",`+tl+`}`), rec2))
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	assert.Equal(t, validReport, outputText(second))
	assert.Len(t, m.calls(), 2)
	assert.Equal(t, "check_report", m.calls()[1].Name)
	assert.Len(t, p.requests(), 2, "no model call in the continuation")
}

// A continuation (previous_response_id, no input) of an incomplete
// response whose attempt failed with invalid_response (an answer without
// the output call, fed back by a set-aside user message) sees the output
// only, as its model does: the output call before that answer is the last
// output it sees, and its submit validates that output (no
// submit_before_output over a feedback the model was never shown).
func TestOutput_ContinuationSubmitsTheOutputItSees(t *testing.T) {
	t.Parallel()
	cut := step{res: provider.Result{Text: "Let me", FinishReason: provider.FinishLength, Usage: api.Usage{InputTokens: 1, OutputTokens: 1}}}
	p := script(calls(1, 1, call("c1", "report", validReport)), text("I am done.", 1, 1), cut, calls(1, 1, call("c2", "submit", `{}`)))
	e, _ := newEngine(t, p, newMock(echoTool))
	tl := `"tools":[` + outputTool(`"reflection":true`) + `]`
	rec, err := run1(t, e, `{"input":"assess",`+tl+`}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusIncomplete, first.Status)
	require.Equal(t, api.CodeInvalidResponse, rec.lambent(t).Attempts[0].Code)
	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`",`+tl+`}`)
	require.NoError(t, err)
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	assert.Equal(t, validReport, outputText(second))
	for _, it := range p.requests()[3].Items {
		assert.NotContains(t, it.Text(), "did not call report", "the continuation's model is not shown the feedback")
	}
}

// An attempt's errors are a list, empty for a valid attempt (and for the
// current one while it runs), as docs/validated-output.md shows them:
// never null, in the response, the terminal event and the stored response.
func TestOutput_AttemptErrorsAreAList(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("c1", "report", validReport)), calls(1, 1, call("c2", "report", validReport)))
	e, _ := newEngine(t, p, newMock(echoTool))
	errorsOf := func(t *testing.T, body []byte) string {
		t.Helper()
		var w struct {
			Lambent struct {
				Attempts []map[string]json.RawMessage `json:"attempts"`
			} `json:"lambent"`
		}
		require.NoError(t, json.Unmarshal(body, &w))
		require.Len(t, w.Lambent.Attempts, 1)
		return string(w.Lambent.Attempts[0]["errors"])
	}
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	assert.Equal(t, "[]", errorsOf(t, rec.resp), "the response")
	stored, err := json.Marshal(e.mustGet(t, rec.response(t).ID))
	require.NoError(t, err)
	assert.Equal(t, "[]", errorsOf(t, stored), "the stored response")
	rec2, err := run1(t, e, `{"input":"assess","stream":true,"tools":[`+outputTool("")+`]}`)
	require.NoError(t, err)
	var last struct {
		Response json.RawMessage `json:"response"`
	}
	require.NoError(t, json.Unmarshal(rec2.events[len(rec2.events)-1], &last))
	assert.Equal(t, "[]", errorsOf(t, last.Response), "the terminal event")
}

// A background response that hands off between attempts resumes with what
// the model saw: the next invocation's model call gets the failed answers
// and their feedback, which the stored response keeps off its output.
func TestOutput_BackgroundResumeKeepsSetAsideHistory(t *testing.T) {
	forStores(t, testOutput_BackgroundResumeKeepsSetAsideHistory)
}

func testOutput_BackgroundResumeKeepsSetAsideHistory(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	slow := clock.taking(15 * time.Minute)
	p := script(slow(text("not json", 1, 1)), slow(text(invalidReport, 1, 1)), slow(text(validReport, 1, 1)))
	e, _, q := bgEngine(t, mk, p, nil, func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"input":"assess","background":true,`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	assert.Equal(t, 2, runInvocations(t, e, q, clock), "a hand-off after two model calls")
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, got.Status)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	wire := decodeResponse(t, b)
	require.Equal(t, []string{"message"}, types(wire.Output))
	assert.Equal(t, validReport, wire.Output[0].Text())
	require.Len(t, p.requests(), 3)
	items := p.requests()[2].Items
	require.Equal(t, []string{"user", "assistant", "user", "assistant", "user"}, fieldOf(items, role))
	assert.Equal(t, "not json", items[1].Text())
	assert.Contains(t, items[2].Text(), "failed validation")
	assert.Equal(t, invalidReport, items[3].Text())
	assert.Contains(t, items[4].Text(), "at '/score'")
}

// A response the release before set-aside items stored (its failed answer
// a "commentary" assistant message with "text" parts, its feedback a user
// message in output, nothing marked aside) still reads and continues: the
// continuation's model gets that history as it was stored, in order.
func TestOutput_ContinuesRecordOfPreviousRelease(t *testing.T) {
	t.Parallel()
	p := script(text(invalidReport, 1, 1), text(validReport, 1, 1), text("You are welcome.", 1, 1))
	e, st := newEngine(t, p, nil)
	first, err := run1(t, e, `{"input":"assess",`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	ctx := context.Background()
	rec, err := st.Get(ctx, first.response(t).ID)
	require.NoError(t, err)
	// The previous release's shape of the same response.
	require.Equal(t, []string{"message", "message", "message"}, types(rec.Response.Output))
	for i := range rec.Response.Output {
		it := &rec.Response.Output[i]
		if it.Hidden.Aside && it.Role == api.RoleAssistant {
			it.Phase = "commentary"
			for j := range it.Content {
				it.Content[j].Type = api.PartText
			}
		}
		it.Hidden.Aside = false
	}
	require.NoError(t, st.Delete(ctx, rec.Response.ID))
	require.NoError(t, st.Create(ctx, rec))

	second, err := run1(t, e, `{"previous_response_id":"`+rec.Response.ID+`","input":"thanks"}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, second.response(t).Status)
	items := p.requests()[2].Items
	require.Equal(t, []string{"user", "assistant", "user", "assistant", "user"}, fieldOf(items, role))
	assert.Equal(t, invalidReport, items[1].Text())
	assert.Equal(t, validReport, items[3].Text())
	assert.Equal(t, "thanks", items[4].Text())
}
