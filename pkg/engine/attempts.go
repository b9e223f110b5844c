package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// Validated output (docs/validated-output.md). An attempt iterates (model
// call, then its tool calls) until the output is produced, then validates
// it. The output is produced by
//   - the output tool without reflection: its call ends the iterations (the
//     turn's other calls still run; the last output call wins);
//   - the output tool with reflection: each output call runs the reflection
//     handler, whose text is the call's result; a submit call ends the
//     iterations with the attempt's last output;
//   - text.format json_schema: the model's final message.
//
// A failed attempt is fed back to the model (as the result of the call that
// ended it, or as a user message when none did) and the next attempt
// continues the conversation. The state lives in the response's "lambent"
// field (the last attempt is the current one) and in its output, the items
// set aside included (api.ItemHidden.Aside: a failed answer, the feedback
// on it; the model sees them, the wire's output does not), so a background
// response resumes it from a checkpoint.
//
// The seam with the loop (loop.go) is r.att, nil when the response
// validates no output; its methods the loop calls are no-ops on nil:
//   - prepare builds it (resolveOutput), adding the output tool (and
//     submit) to the response's tools, whose calls end an attempt
//     (requestTool.ends);
//   - the loop readies it (begin), bounds the model calls by it (maxTurns,
//     exhausted), counts each call (used), keeps tool_choice "required"
//     for it (keepsRequired) and tells the observer the attempt (number)
//     and when it starts and ends (attemptStarted, attemptEnded:
//     observe.go);
//   - an answer without tool calls is judged (answered, then afterAttempt);
//   - a turn's calls that end the attempt are answered with the verdict
//     (endIterations, which runs the validators: validate.go; then ended
//     and afterAttempt);
//   - a cancelled response records where it stopped (finalize).

// attempts is the validated-output state of a run.
type attempts struct {
	// output is the output tool's name, "" when the final message is the
	// output (text.format json_schema).
	output  string
	reflect bool
	check   checker
	// maxAttempts and maxIterations are the loop policy (begin).
	maxAttempts, maxIterations int
	// lastOutput is the arguments of the current attempt's last output
	// call, "" before the first.
	lastOutput string
	// verdict is the current attempt's result once its iterations ended;
	// afterAttempt acts on it.
	verdict *verdict
	// phase is where a cancellation found the attempt.
	phase string
}

// verdict is how an attempt ended.
type verdict struct {
	// code is "" for a valid output, else the attempt's failure code.
	code   string
	errors []string
	// output is the validated output (output tool mode).
	output string
	// message: the feedback goes to the model as a user message (no call
	// ended the attempt).
	message bool
	// answer is the output index of the model's answer that ended the
	// attempt, -1 when none did.
	answer int
	// refused: the answer (text.format json_schema) is the model's
	// refusal, which ends the response as it is.
	refused bool
}

// Cancellation phases.
const (
	phaseIteration  = "iteration"
	phaseValidation = "validation"
)

// submitParameters is the schema of the submit tool: no arguments.
const submitParameters = `{"type":"object","properties":{},"additionalProperties":false}`

// resolveOutput readies validated output for a request with an output tool
// or text.format json_schema: the schema is compiled (once per request),
// the validator and reflection tools are resolved through the catalog, and
// the output tool (and submit) join the tools the model sees. patterns
// bounds the schema's regular expressions (limits.Limits.SchemaPatterns).
func (r *run) resolveOutput(hosted tools.Catalog, patterns int) error {
	var t *api.Tool
	p := ""
	for i := range r.req.Tools {
		if r.req.Tools[i].IsOutput() {
			t, p = &r.req.Tools[i], "tools["+strconv.Itoa(i)+"]"
		}
	}
	if t == nil {
		f := r.req.Text
		if f == nil || f.Format.Type != api.FormatJSONSchema {
			return nil
		}
		s, err := compileOutputSchema(f.Format.Schema, "text.format.schema", "text.format", patterns)
		if err != nil {
			return err
		}
		r.att = &attempts{check: checker{schema: s}}
		return nil
	}
	if hosted == nil {
		return api.InvalidRequestCode(p+".type", "unsupported_tool", "The %s tool needs the agentic loop, which this gateway runs only with hosted tools configured.", api.ToolOutput)
	}
	s, err := compileOutputSchema(t.Parameters, p+".parameters", fmt.Sprintf("the output tool %q", t.Name), patterns)
	if err != nil {
		return err
	}
	a := &attempts{output: t.Name, reflect: t.Reflects(), check: checker{schema: s}}
	lookup := func(param, name string) (tools.ToolExecutor, error) {
		_, exec, ok := hosted.Lookup(name)
		if !ok || exec == nil {
			return nil, api.InvalidRequestCode(param, "unknown_hosted_tool", "Unknown hosted tool %q: this gateway's tool manifest has no tool named %q.", api.HostedPrefix+name, name)
		}
		return exec, nil
	}
	for i, v := range t.Validators {
		name := strings.TrimPrefix(v, api.HostedPrefix)
		param := p + ".validators[" + strconv.Itoa(i) + "]"
		if slices.ContainsFunc(a.check.validators, func(w validatorTool) bool { return w.name == name }) {
			return api.InvalidRequest(param, "the validator %q is named twice", v)
		}
		exec, err := lookup(param, name)
		if err != nil {
			return err
		}
		a.check.validators = append(a.check.validators, validatorTool{name: name, exec: exec})
	}
	out := requestTool{def: api.ToolDefinition{Name: t.Name, Parameters: t.Parameters, Strict: t.Strict}}
	if t.Description != nil {
		out.def.Description = *t.Description
	}
	switch name := t.ReflectionTool(); {
	case !a.reflect:
		out.ends, out.kind = true, ToolKindOutput
	case name != "":
		exec, err := lookup(p+".reflection", name)
		if err != nil {
			return err
		}
		out.exec = hostedReflection{name: name, exec: exec}
	default:
		out.exec = defaultReflection{}
	}
	if out.exec != nil {
		out.kind = ToolKindReflection
	}
	r.tools.add(out)
	if a.reflect {
		r.tools.add(requestTool{def: api.ToolDefinition{Name: api.SubmitTool, Description: api.SubmitDescription, Parameters: json.RawMessage(submitParameters)}, ends: true, kind: ToolKindSubmit})
	}
	r.att = a
	return nil
}

// compileOutputSchema compiles the schema of a validated output, at param
// of the request (what names it in errors): a 400 invalid_schema when it
// does not compile, limit_exceeded when its regular expressions are over
// patterns.
func compileOutputSchema(raw json.RawMessage, param, what string, patterns int) (*jsonschema.Schema, error) {
	s, err := schemacheck.Compile(raw, patterns)
	var pe *schemacheck.PatternsError
	switch {
	case errors.As(err, &pe):
		return nil, limits.Exceeded(param, "the size of the schema's regular expressions (repetitions expanded)", pe.Size, pe.Limit)
	case err != nil:
		return nil, api.InvalidRequestCode(param, "invalid_schema", "Invalid JSON Schema for %s: %v", what, err)
	}
	return s, nil
}

// outputDefs is the output tool as the model sees it, with submit when it
// reflects (the response echoes them).
func (a *attempts) outputDefs(r *run) []api.ToolDefinition {
	defs := []api.ToolDefinition{r.tools.defs[a.output].def}
	if a.reflect {
		defs = append(defs, r.tools.defs[api.SubmitTool].def)
	}
	return defs
}

// begin readies the attempts for the loop: the loop policy (the request's
// "lambent" object over the gateway's settings, which checkRequest made
// sure it does not exceed) and the current attempt, the first or the one a
// resumed response was in. It reports whether it started an attempt.
func (a *attempts) begin(r *run, cfg *Config) (started bool) {
	if a == nil {
		return false
	}
	a.maxAttempts, a.maxIterations = cfg.Loop.MaxAttempts, cfg.Loop.MaxIterationsPerAttempt
	if p := r.req.Lambent; p != nil {
		if p.MaxAttempts != nil {
			a.maxAttempts = *p.MaxAttempts
		}
		if p.MaxIterationsPerAttempt != nil {
			a.maxIterations = *p.MaxIterationsPerAttempt
		}
	}
	if r.resp.Lambent == nil {
		r.resp.Lambent = &api.LambentInfo{}
	}
	if n := len(r.resp.Lambent.Attempts); n == 0 || r.resp.Lambent.Attempts[n-1].Done() {
		a.next(r)
		started = true
	}
	pending := map[string]bool{}
	for _, c := range r.pendingCalls() {
		pending[callKey(&c)] = true
	}
	a.lastOutput = lastOutput(a.output, pending, r.history, r.input, r.resp.Output)
	return started
}

// next starts the next attempt.
func (a *attempts) next(r *run) {
	info := r.resp.Lambent
	info.Attempts = append(info.Attempts, api.Attempt{Number: len(info.Attempts) + 1, Errors: []string{}})
	a.lastOutput = ""
}

// number is the current attempt's number, 1 without validated output.
func (a *attempts) number(r *run) int {
	if a == nil || r.resp.Lambent == nil || len(r.resp.Lambent.Attempts) == 0 {
		return 1
	}
	return a.current(r).Number
}

// current is the current attempt.
func (a *attempts) current(r *run) *api.Attempt {
	l := r.resp.Lambent.Attempts
	return &l[len(l)-1]
}

// lastOutput finds the current attempt's last output in the conversation
// (a resumed response, or one continuing an incomplete one): the arguments
// of the last call of the output tool after the last answered submit call
// or user message (feedback or new input), which end attempts. pending
// holds the ids of the calls not answered yet. A continuation's history
// is the output shown (api.Shown): feedback set aside, which its model
// never saw, ends no attempt there (docs/validated-output.md).
func lastOutput(name string, pending map[string]bool, lists ...[]api.Item) string {
	for l := len(lists) - 1; l >= 0; l-- {
		for i := len(lists[l]) - 1; i >= 0; i-- {
			it := &lists[l][i]
			switch {
			case it.Type == api.ItemMessage && it.Role == api.RoleUser:
				return ""
			case it.Type != api.ItemFunctionCall && it.Type != api.ItemMCPCall:
			case it.Name == api.SubmitTool && !pending[callKey(it)]:
				return ""
			case it.Name == name:
				return it.Arguments
			}
		}
	}
	return ""
}

// used counts one model call of the current attempt with its usage.
func (a *attempts) used(r *run, u api.Usage) {
	if a == nil {
		return
	}
	cur := a.current(r)
	cur.Iterations++
	cur.Usage.Add(u)
}

// exhausted fails the response when the current attempt has used its
// iterations (checked before every model call): no validation follows.
func (a *attempts) exhausted(r *run) (outcome, bool) {
	if a == nil {
		return outcome{}, false
	}
	cur := a.current(r)
	if cur.Iterations < a.maxIterations {
		return outcome{}, false
	}
	what := "the output"
	if a.output != "" {
		what = fmt.Sprintf("an output (a call of %s)", a.output)
		if a.reflect {
			what = fmt.Sprintf("a submitted output (a call of %s, then %s)", a.output, api.SubmitTool)
		}
	}
	msg := fmt.Sprintf("Attempt %d used its %d iterations without producing %s.", cur.Number, a.maxIterations, what)
	cur.Code, cur.Errors = api.CodeMaxIterations, []string{msg}
	return outcome{status: api.StatusFailed, err: &api.Error{Type: api.ErrTypeServer, Code: api.CodeMaxIterations, Message: msg}, answer: true}, true
}

// endIterations answers the calls of a turn that end the attempt's
// iterations (the output tool without reflection, submit) once the turn's
// other calls have their results: the attempt's last output (the last
// output call, of this turn or an earlier one) is validated and the verdict
// is the result of the last of them. The validator calls follow in output.
// Each is observed as an execution (observed), the last one's spanning
// the validation; iteration is the model call that asked for them.
func (e *Engine) endIterations(ctx context.Context, r *run, calls []api.Item, plans []plannedCall, iteration int) {
	a := r.att
	last := -1
	for i := range plans {
		if calls[i].Name == a.output && plans[i].errText == "" {
			a.lastOutput = calls[i].Arguments
		}
		if plans[i].ends {
			last = i
		}
	}
	if last < 0 {
		return
	}
	var made []serverCall
	judge := func(ctx context.Context) *tools.ToolResult {
		v := &verdict{output: a.lastOutput, answer: -1}
		if v.output == "" {
			v.code = api.CodeSubmitBeforeOutput
			v.errors = []string{fmt.Sprintf("%s was called before %s: there is no output to submit.", api.SubmitTool, a.output)}
		} else {
			a.phase = phaseValidation
			v.errors, made = e.validate(ctx, r, v.output, iteration)
			if ctx.Err() == nil {
				a.phase = ""
			}
			if v.errors != nil {
				v.code = api.CodeValidationFailed
			}
		}
		a.verdict = v
		return &tools.ToolResult{CallID: callKey(&calls[last]), Output: a.feedback(r, v), IsError: v.code != ""}
	}
	for i := range plans {
		if !plans[i].ends {
			continue
		}
		fn := judge
		if i != last {
			fn = func(context.Context) *tools.ToolResult {
				return &tools.ToolResult{CallID: callKey(&calls[i]), Output: fmt.Sprintf("Superseded by the later call of %s in this turn.", calls[last].Name)}
			}
		}
		r.recordResult(&calls[i], e.observed(ctx, r, &plans[i], iteration, fn))
	}
	for _, c := range made {
		r.show(c)
	}
}

// answered judges a model answer without tool calls: with an output tool,
// an invalid response; with text.format json_schema, the output.
func (e *Engine) answered(r *run) {
	a := r.att
	v := &verdict{message: true, answer: -1}
	// The turn's items are at the end: reasoning and the message.
	for i := len(r.resp.Output) - 1; i >= 0 && v.answer < 0; i-- {
		it := &r.resp.Output[i]
		switch {
		case it.Type == api.ItemMessage && it.Role == api.RoleAssistant:
			v.answer, v.output = i, it.Text()
		case it.Type != api.ItemReasoning:
			i = 0
		}
	}
	switch {
	case a.output != "":
		v.code, v.output = api.CodeInvalidResponse, ""
		v.errors = []string{fmt.Sprintf("The answer did not call %s: the output must be given as the arguments of a call of %s.", a.output, a.output)}
	case v.answer >= 0 && refusal(&r.resp.Output[v.answer]):
		v.refused = true
	default:
		if v.errors = schemacheck.Errors(a.check.schema, v.output); v.errors != nil {
			v.code = api.CodeValidationFailed
		}
	}
	a.verdict = v
}

// refusal reports whether the message it is the model's refusal: it holds
// a refusal part.
func refusal(it *api.Item) bool {
	return slices.ContainsFunc(it.Content, func(p api.ContentPart) bool { return p.Type == api.PartRefusal })
}

// setAsideBut sets aside (api.ItemHidden.Aside) every assistant message of
// the output but the one at keep (-1: none), text the model wrote next to
// its calls: output_text, which the SDKs' helpers read and parse, is then
// the validated output (or the refusal) alone.
func (r *run) setAsideBut(keep int) {
	for i := range r.resp.Output {
		if it := &r.resp.Output[i]; i != keep && it.Type == api.ItemMessage && it.Role == api.RoleAssistant {
			it.Hidden.Aside = true
		}
	}
}

// setAsideAnswer sets aside the model turn whose answer, at idx, failed
// its attempt: the answer and the reasoning items before it. The model
// sees them in its later calls; a response's output as clients see it,
// continuations and conversations do not, as OpenAI would send the valid
// answer alone.
func (r *run) setAsideAnswer(idx int) {
	r.resp.Output[idx].Hidden.Aside = true
	for i := idx - 1; i >= 0 && r.resp.Output[i].Type == api.ItemReasoning; i-- {
		r.resp.Output[i].Hidden.Aside = true
	}
}

// afterAttempt acts on the verdict of an attempt whose iterations ended:
// a valid output completes the response (the output tool's output becomes
// the final message), and so does a refusal of structured text, left
// unjudged; a failed attempt is fed back and the next one starts
// (stop false), or, when none is left, the response fails with the
// attempt's code.
func (e *Engine) afterAttempt(ctx context.Context, r *run) (outcome, bool) {
	a := r.att
	v := a.verdict
	a.verdict = nil
	cur := a.current(r)
	if v.refused {
		// As at OpenAI, a refusal of structured text is the response's
		// answer: there is no output to judge, nor to ask for again.
		r.setAsideBut(v.answer)
		return outcome{status: api.StatusCompleted}, true
	}
	if v.code == "" {
		cur.Valid = true
		e.attemptEnded(ctx, r)
		// The model's other text is set aside.
		r.setAsideBut(v.answer)
		if a.output != "" {
			r.finalMessage(v.output)
		}
		return outcome{status: api.StatusCompleted}, true
	}
	cur.Code, cur.Errors = v.code, v.errors
	e.attemptEnded(ctx, r)
	if cur.Number >= a.maxAttempts {
		// The last answer stays in the failed response's output, as the
		// last output call does: what the model last said.
		msg := fmt.Sprintf("The output was not valid after %d attempts. Last errors: %s", cur.Number, strings.Join(v.errors, "; "))
		return outcome{status: api.StatusFailed, err: &api.Error{Type: api.ErrTypeServer, Code: v.code, Message: msg}, answer: true}, true
	}
	if v.answer >= 0 {
		r.setAsideAnswer(v.answer)
	}
	if v.message {
		r.addFeedback(a.feedback(r, v))
	}
	a.next(r)
	e.attemptStarted(ctx, r)
	return outcome{}, false
}

// maxTurns is the most model calls of the response: every attempt's
// iterations (the loop policy); false without validated output.
func (a *attempts) maxTurns() (int, bool) {
	if a == nil {
		return 0, false
	}
	return a.maxAttempts * a.maxIterations, true
}

// runsValidators reports whether an output is checked by validator tools
// too (which take time, as tool calls do).
func (a *attempts) runsValidators() bool { return a != nil && len(a.check.validators) > 0 }

// ended reports whether the current attempt's iterations have ended.
func (a *attempts) ended() bool { return a != nil && a.verdict != nil }

// feedback is what the model is told of the current attempt's verdict.
func (a *attempts) feedback(r *run, v *verdict) string {
	if v.code == "" {
		return "Output accepted."
	}
	cur := a.current(r)
	var b strings.Builder
	switch v.code {
	case api.CodeSubmitBeforeOutput:
		fmt.Fprintf(&b, "Error: %s was called before %s: there is no output to submit.", api.SubmitTool, a.output)
	case api.CodeInvalidResponse:
		fmt.Fprintf(&b, "Your answer did not call %s: give your final output as the arguments of a call of %s.", a.output, a.output)
	default:
		what := "The output"
		if a.output == "" {
			what = "Your answer"
		}
		fmt.Fprintf(&b, "%s failed validation:", what)
		for _, m := range v.errors {
			b.WriteString("\n- ")
			b.WriteString(m)
		}
	}
	fmt.Fprintf(&b, "\n(Attempt %d of %d failed.", cur.Number, a.maxAttempts)
	switch {
	case cur.Number >= a.maxAttempts:
		b.WriteString(" No attempts are left.)")
	case a.output == "":
		b.WriteString(" Answer again with only the corrected JSON.)")
	case a.reflect:
		fmt.Fprintf(&b, " Call %s with the corrected output, then call %s.)", a.output, api.SubmitTool)
	default:
		fmt.Fprintf(&b, " Call %s again with the corrected output.)", a.output)
	}
	return b.String()
}

// finalMessage adds the validated output as the response's final message,
// streamed like the model's text, so that output_text is the output.
func (r *run) finalMessage(output string) {
	asm := newAssembler(r)
	_ = asm.delta(provider.Delta{Kind: provider.DeltaText, Text: strings.TrimSpace(output)})
	asm.finish(api.ItemCompleted)
}

// addFeedback adds a user message telling the model why its attempt
// failed, set aside as the answer it is about (setAsideAnswer).
func (r *run) addFeedback(text string) {
	idx := len(r.resp.Output)
	r.resp.Output = append(r.resp.Output, api.Item{Type: api.ItemMessage, ID: r.newItemID(api.PrefixMessage), Status: api.ItemCompleted,
		Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: text}}, Hidden: api.ItemHidden{Aside: true}})
	it := &r.resp.Output[idx]
	r.em.itemEvent(api.EventOutputItemAdded, idx, it)
	r.em.itemEvent(api.EventOutputItemDone, idx, it)
}

// finalize records where a cancelled response stopped.
func (a *attempts) finalize(r *run, out outcome) {
	if a == nil || out.status != api.StatusCancelled || r.resp.Lambent == nil || len(r.resp.Lambent.Attempts) == 0 {
		return
	}
	cur := a.current(r)
	phase := a.phase
	if phase == "" {
		phase = phaseIteration
	}
	r.resp.Lambent.Cancelled = &api.Cancellation{Phase: phase, Attempt: cur.Number, Iteration: cur.Iterations}
}

// keepsRequired reports whether tool_choice "required" holds for every
// model call: with an output tool the answer itself is a tool call.
func (a *attempts) keepsRequired() bool { return a != nil && a.output != "" }

// defaultReflection is the reflection handler "reflection": true: the
// output, formatted, with what to do next.
type defaultReflection struct{}

// Execute implements tools.ToolExecutor.
func (defaultReflection) Execute(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(c.Arguments), "", "  "); err != nil {
		return &tools.ToolResult{CallID: c.ID, Output: fmt.Sprintf("Error: the output is not valid JSON (%v). Call %s again with a JSON object.", err, c.Name), IsError: true}, nil
	}
	return &tools.ToolResult{CallID: c.ID, Output: fmt.Sprintf("Your output for %s:\n%s\nReview it. If it is correct and complete, call %s to submit it for validation; otherwise call %s again with the corrected output.",
		c.Name, b.String(), api.SubmitTool, c.Name)}, nil
}

// hostedReflection runs a hosted tool as the reflection handler: it gets
// {"output": <the output>} and its text is the output call's result.
type hostedReflection struct {
	name string
	exec tools.ToolExecutor
}

// Execute implements tools.ToolExecutor.
func (h hostedReflection) Execute(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
	args, err := outputArgs(c.Arguments)
	if err != nil {
		return &tools.ToolResult{CallID: c.ID, Output: fmt.Sprintf("Error: %v. Call %s again with a JSON object.", err, c.Name), IsError: true}, nil
	}
	res, err := h.exec.Execute(ctx, tools.ToolCall{ID: c.ID, Name: h.name, Arguments: args, ResponseID: c.ResponseID, Tenant: c.Tenant})
	if err != nil {
		return nil, fmt.Errorf("reflection %s: %w", h.name, err)
	}
	return res, nil
}
