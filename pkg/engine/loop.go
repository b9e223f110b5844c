package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// storeTimeout bounds the final store write, which runs even after the
// request context is cancelled so that cancelled responses are kept.
const storeTimeout = 15 * time.Second

// writeContext is the context of a write that runs even after ctx is
// cancelled: without ctx's cancellation, and within storeTimeout unless
// every one of stores (nil ones skipped) is store.InProcess, whose calls
// cannot hang (a deadline's timer costs a request about 1 µs and 4
// allocations).
func writeContext(ctx context.Context, stores ...any) (context.Context, context.CancelFunc) {
	wctx := context.WithoutCancel(ctx)
	for _, s := range stores {
		if p, ok := s.(store.InProcess); s != nil && (!ok || !p.InProcess()) {
			return context.WithTimeout(wctx, storeTimeout)
		}
	}
	return wctx, func() {}
}

// outcome is how the loop ended.
type outcome struct {
	status api.Status
	reason string     // incomplete reason
	err    *api.Error // failure
	// answer marks a failure that is the response's own result (validated
	// output): the response is written, not turned into an HTTP error.
	answer bool
	// cut marks a response the deadline stopped in a model call that had
	// sent output: that output ends it (its last item incomplete), so a
	// background run does not hand it off, whose next invocation would
	// make the call again after it (the cut text then part of the answer).
	cut bool
}

// CreateResponse creates a response for req, running the loop within this
// call, and writes it to w: as events when req.Stream is set, else as one
// final response. Errors returned before anything was written are client
// errors (*api.Error) for the transport to send as an HTTP error. Requests
// with background=true go to CreateBackground instead: the transport picks.
// A tenant with Limits.TenantInFlight responses running here is refused
// with a 429 first.
func (e *Engine) CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w ResponseWriter) error {
	t, err := e.inflight.enter(ctx)
	if err != nil {
		return err
	}
	defer e.inflight.leave(t)
	cache := connectionCache(w)
	r, err := e.prepare(ctx, req, chosenID(w), cache)
	if err != nil {
		return err
	}
	// A response that does not reach its end releases its conversation.
	defer e.endConversation(ctx, r)
	if err := e.checkSize(r); err != nil {
		return err
	}
	r.em = &emitter{w: w, stream: req.Stream}
	r.budget = newBudget(ctx, e.cfg.Now, e.cfg.Loop.DeadlineReserve)
	r.em.opening(r.resp)
	out := e.loop(ctx, r)
	e.finalize(ctx, r, out)
	refused := r.refusal(out)
	if r.conv != nil {
		r.conv.refused = refused
	}
	err = e.save(ctx, r, cache)
	// The conversation gets the response's items before the client gets
	// the response's end, so that the client's next create finds it free.
	e.endConversation(ctx, r)
	if err != nil {
		if e.log.Enabled(ctx, slog.LevelError) {
			e.log.LogAttrs(ctx, slog.LevelError, "store failed", slog.String("response_id", r.resp.ID), slog.String("status", string(r.resp.Status)),
				slog.String("model", r.resp.Model), slog.Int("output_items", len(r.resp.Output)), slog.Any("err", err))
		}
		se := api.ServerError(err, "The response %s was generated but could not be stored.", r.resp.ID)
		se.Code = "store_failed"
		// A stream nothing of was sent yet (its opening held) is taken
		// back: the request gets the error, as one that does not stream.
		if req.Stream && !r.em.retract() {
			ev := api.NewErrorEvent(se.ForClient(requestid.From(ctx)))
			r.em.emit(&ev)
			return nil
		}
		return se
	}
	// The record is built only when it is logged (benchmarks and busy
	// gateways run above info).
	if e.log.Enabled(ctx, slog.LevelInfo) {
		e.log.LogAttrs(ctx, slog.LevelInfo, "response done", slog.String("response_id", r.resp.ID), slog.String("status", string(r.resp.Status)),
			slog.String("model", r.resp.Model), slog.Int("output_items", len(r.resp.Output)))
	}
	if refused {
		return out.failure(r.resp.ID)
	}
	if req.Stream {
		r.em.lifecycle(api.TerminalEvent(r.resp.Status), r.resp)
		return nil
	}
	if out.status == api.StatusCancelled {
		return ctx.Err()
	}
	return w.WriteResponse(r.resp)
}

// refusal reports whether the response's failure out is its request's
// HTTP error: the response was refused (outcome.refused) and, when it
// streams, nothing of the stream was sent, which is then taken back. A
// stream refused before it began gets the error a request that does not
// stream gets (OpenAI's refusal of a request is an HTTP error); the
// context's end is OpenAI's response.failed, which clients (Codex)
// recognise only there.
func (r *run) refusal(out outcome) bool {
	if !out.refused() {
		return false
	}
	if !r.req.Stream {
		return true
	}
	return out.err.Code != provider.CodeContextLengthExceeded && r.em.retract()
}

// refused reports whether the response failed for a reason that is not its
// own result (validated output's): the request's failure, which the client
// gets as an HTTP error when nothing of the response was sent.
func (o outcome) refused() bool {
	return o.err != nil && o.status == api.StatusFailed && !o.answer
}

// failure is the HTTP error of a refused response (refused), naming the
// response id, stored failed.
func (o outcome) failure(id string) *api.Error {
	fe := *o.err
	fe.Message = fmt.Sprintf("%s (response %s failed)", fe.Message, id)
	return &fe
}

// save keeps the terminal response of r: in the connection's cache c
// (nil: none) and, when the request stores it, in the store.
func (e *Engine) save(ctx context.Context, r *run, c ConnectionCache) error {
	stores := e.cfg.Store != nil && r.req.Stores()
	var st store.ResponseStore
	if stores {
		st = e.cfg.Store
	}
	sctx, cancel := writeContext(ctx, c, st)
	defer cancel()
	if c != nil {
		if err := c.Put(sctx, r.record()); err != nil {
			return err
		}
	}
	if !stores {
		return nil
	}
	return st.Create(sctx, r.record())
}

// finalize sets the terminal status and its details on the response, and
// ends the stream's mcp_call items of calls that did not run. A
// failure's error is what the client may see (api.Error.ForClient: a
// server error says what happened in general terms and names the request
// id of ctx); its cause is logged.
func (e *Engine) finalize(ctx context.Context, r *run, out outcome) {
	resp := r.resp
	if resp.Usage == nil {
		resp.Usage = &api.Usage{}
	}
	resp.Status = out.status
	if e.cfg.Loop.OpenAICompat && out.status == api.StatusRequiresAction {
		resp.Status = api.StatusCompleted
	}
	switch resp.Status {
	case api.StatusCompleted, api.StatusRequiresAction:
		now := e.cfg.Now().Unix()
		resp.CompletedAt = &now
	case api.StatusIncomplete:
		resp.IncompleteDetails = &api.IncompleteDetails{Reason: out.reason}
	case api.StatusFailed:
		code := out.err.Code
		if code == "" {
			code = out.err.Type
		}
		if out.err.Internal() {
			e.log.ErrorContext(ctx, "response failed", "response_id", resp.ID, "code", code, "err", out.err.Err)
		}
		resp.Error = &api.ResponseError{Code: code, Message: out.err.ForClient(requestid.From(ctx)).Message}
	}
	r.att.finalize(r, out)
	r.closeOpenCalls()
	r.stampTiming(resp, e.cfg.Now())
}

// loop is the agentic loop: resolve calls left pending by the previous
// response, then call the model and run its tool calls until it answers,
// pauses for the client, or a limit ends it. With validated output
// (attempts.go) the iterations are grouped in attempts: an answer or an
// output/submit call ends an attempt, and a failed one continues the loop.
func (e *Engine) loop(ctx context.Context, r *run) (out outcome) {
	r.startTiming(e.cfg.Now())
	if ctx, end := e.observe(ctx, r); end != nil {
		defer func() { end(out) }()
		return e.turns(ctx, r)
	}
	return e.turns(ctx, r)
}

// turns runs the loop's turns (see loop). A prewarm (NoGenerate) runs
// none: the response completes with its input and no output.
func (e *Engine) turns(ctx context.Context, r *run) outcome {
	if r.req.NoGenerate {
		return outcome{status: api.StatusCompleted}
	}
	if r.att.begin(r, &e.cfg) {
		e.attemptStarted(ctx, r)
	}
	defer r.tools.closeMCP()
	r.em.withOpening(func() { e.startMCP(ctx, r) })
	if pending := r.pendingCalls(); len(pending) > 0 {
		// They were asked for by the last model call so far.
		if out, stop := e.runTools(ctx, r, pending, true, r.turns); stop {
			return out
		}
	}
	for {
		if r.checkpoint != nil {
			if err := r.checkpoint(); err != nil {
				return outcome{status: api.StatusFailed, err: api.AsError(err)}
			}
		}
		if ctx.Err() != nil {
			return outcome{status: api.StatusCancelled}
		}
		e.renewConversation(ctx, r)
		turn := r.turns
		// An attempt out of iterations is the precise reason when the last
		// attempt's iterations also reach the turn limit.
		if out, stop := r.att.exhausted(r); stop {
			e.attemptEnded(ctx, r)
			return out
		}
		if turn >= e.turnLimit(r) {
			return outcome{status: api.StatusIncomplete, reason: api.ReasonMaxTurns}
		}
		if !r.budget.fits(r.budget.maxModel) {
			return outcome{status: api.StatusIncomplete, reason: api.ReasonDeadline}
		}
		if out, stop := e.compactBeforeCall(ctx, r); stop {
			return out
		}
		items := len(r.resp.Output)
		res, err := e.callModel(ctx, r, turn)
		if err != nil {
			out := r.modelFailure(ctx, err)
			// What the model had sent is its turn's output, cut: its last
			// item is incomplete only in an incomplete response (an
			// incomplete item needs one, OpenResponses "Items"); in a
			// failed or cancelled one the items left open stay in
			// progress, and its calls are cut.
			if out.status != api.StatusIncomplete {
				r.asm.abandon()
				return out
			}
			out.cut = len(r.resp.Output) > items
			// None of its calls runs (finalize ends their mcp_call items).
			r.asm.finish(api.ItemIncomplete)
			return out
		}
		// The turn counts from its answer on: a run that stops before its
		// tool calls (a background hand-off with the calls pending) has
		// made it, and its continuation must not make it again.
		r.turns = turn + 1
		r.addUsage(res)
		a := r.asm
		itemStatus := api.ItemCompleted
		if res.FinishReason == provider.FinishLength {
			itemStatus = api.ItemIncomplete
		}
		// A cut turn's calls do not run (finalize ends their mcp_call items).
		calls := a.finish(itemStatus)
		r.noteCount(res)
		switch res.FinishReason {
		case provider.FinishLength:
			return outcome{status: api.StatusIncomplete, reason: api.ReasonMaxOutputTokens}
		case provider.FinishContentFilter:
			return outcome{status: api.StatusIncomplete, reason: api.ReasonContentFilter}
		}
		if len(calls) == 0 && r.att != nil {
			e.answered(r)
			if out, stop := e.afterAttempt(ctx, r); stop {
				return out
			}
			continue
		}
		if len(calls) == 0 || e.cfg.Hosted == nil && len(r.tools.mcp) == 0 || r.toolChoiceMode() == api.ToolChoiceNone {
			return outcome{status: api.StatusCompleted}
		}
		if out, stop := e.runTools(ctx, r, calls, false, turn+1); stop {
			return out
		}
	}
}

// modelFailure is the outcome of a model call (or a summarising call)
// that failed with err: cancelled when ctx ended, incomplete for its
// deadline when the budget's ended, else failed.
func (r *run) modelFailure(ctx context.Context, err error) outcome {
	switch {
	case ctx.Err() != nil:
		return outcome{status: api.StatusCancelled}
	case r.budget.left() <= 0:
		return outcome{status: api.StatusIncomplete, reason: api.ReasonDeadline}
	}
	return outcome{status: api.StatusFailed, err: api.AsError(err)}
}

// addUsage counts a model call's usage: in the response's usage (its
// cache writes as input_tokens_details.cache_write_tokens), its cache
// writes in lambent.usage too, and in the current attempt's.
func (r *run) addUsage(res *provider.Result) {
	u := res.Usage
	u.InputTokensDetails.CacheWriteTokens = res.CacheWriteTokens
	r.resp.AddCacheWrites(res.CacheWriteTokens)
	if r.resp.Usage == nil {
		r.resp.Usage = &api.Usage{}
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	r.resp.Usage.Add(u)
	r.att.used(r, u)
}

// turnLimit bounds a response's model calls: LAMBENT_MAX_TURNS, or with
// validated output the loop policy (every attempt's iterations), at most
// LAMBENT_MAX_ATTEMPTS × LAMBENT_MAX_ITERATIONS_PER_ATTEMPT (checkRequest).
func (e *Engine) turnLimit(r *run) int {
	if n, ok := r.att.maxTurns(); ok {
		return n
	}
	return e.cfg.Loop.MaxTurns
}

func (r *run) toolChoiceMode() string {
	if r.req.ToolChoice == nil {
		return api.ToolChoiceAuto
	}
	return r.req.ToolChoice.EffectiveMode()
}

// callModel runs one model call, its deltas going through a fresh
// assembler (kept on the run for finish).
// The call is bounded by the deadline budget and measured for it.
func (e *Engine) callModel(ctx context.Context, r *run, turn int) (*provider.Result, error) {
	r.asm = newAssembler(r) // before any error: the loop finishes it
	preq, err := r.providerRequest(tenant.From(ctx), turn)
	if err != nil {
		return nil, err
	}
	r.modelCalls = turn + 1
	ctx, cancel := r.budget.bound(ctx)
	defer cancel()
	start := e.cfg.Now()
	defer func() { r.modelTook(e.cfg.Now().Sub(start)) }()
	// A call refused for its size is made again cut (truncation.go)
	// while it has sent nothing: its deltas would be in the output.
	items := len(r.resp.Output)
	for refusals := 1; ; refusals++ {
		res, err := e.observedSend(ctx, r, preq, turn)
		if err == nil || !r.cutAgain(preq, err, refusals, items) {
			return res, err
		}
		if e.log.Enabled(ctx, slog.LevelInfo) {
			e.log.LogAttrs(ctx, slog.LevelInfo, "input truncated", slog.String("response_id", r.resp.ID), slog.Int("iteration", turn+1), slog.String("cut_item", r.cut))
		}
		r.asm = newAssembler(r)
		if preq, err = r.providerRequest(tenant.From(ctx), turn); err != nil {
			return nil, err
		}
	}
}

// observedSend makes the model call preq of the turn (send), which the
// run's observer sees as one model call: a call refused for its size
// and made again cut is two.
func (e *Engine) observedSend(ctx context.Context, r *run, preq *provider.Request, turn int) (*provider.Result, error) {
	if r.obs == nil {
		return e.send(ctx, r, preq)
	}
	m := &ModelCall{ResponseID: r.resp.ID, Model: preq.Model, Iteration: turn + 1, Stream: r.req.Stream}
	return e.observedCall(ctx, r, m, func(ctx context.Context) (*provider.Result, error) { return e.send(ctx, r, preq) })
}

// observedCall makes the model call call, which the run's observer
// (r.obs, not nil) sees as m: its start, then its end.
func (e *Engine) observedCall(ctx context.Context, r *run, m *ModelCall, call func(context.Context) (*provider.Result, error)) (res *provider.Result, err error) {
	m.Start = e.cfg.Now()
	ctx = r.obs.StartModelCall(ctx, m)
	defer func() {
		m.Duration, m.Result, m.Err = e.cfg.Now().Sub(m.Start), res, err
		r.obs.EndModelCall(ctx, m)
	}()
	return call(ctx)
}

// send makes the model call preq, its deltas going to the run's
// assembler.
func (e *Engine) send(ctx context.Context, r *run, preq *provider.Request) (*provider.Result, error) {
	if r.em.stream {
		// Streamed responses, and every background run (its followers see
		// the model's answer as it comes), stream the model call.
		return e.cfg.Provider.Stream(ctx, preq, r.asm.delta)
	}
	res, err := e.cfg.Provider.Complete(ctx, preq)
	if err != nil {
		return nil, err
	}
	r.asm.replay(res)
	return res, nil
}

// tenantScoped returns a client's value for the provider's account, which
// every tenant shares: a hash of the tenant and the value (the same for
// the same tenant and value), so that tenants never share a prompt-cache
// bucket (prompt_cache_key) nor an end-user identity (safety_identifier,
// user) at the provider; "" stays "". The response echoes the client's
// own value.
func tenantScoped(tn, v string) string {
	if v == "" {
		return ""
	}
	h := sha256.Sum256([]byte(tn + "\x00" + v))
	return "lmb_" + hex.EncodeToString(h[:20])
}

// providerUser is the provider's user of r's model calls (its
// summarising calls included) for tenant tn: the request's
// safety_identifier, else its user, scoped to the tenant (tenantScoped).
func (r *run) providerUser(tn string) string {
	return tenantScoped(tn, cmp.Or(r.req.SafetyIdentifier, r.req.User))
}

// seen is the conversation as the model sees it (modelItems), from the
// latest server-side compaction item on, compaction items as their
// summaries (withSummaries), before any truncation.
func (r *run) seen() []api.Item {
	return r.withSummaries(r.modelItems(r.history, r.input, r.resp.Output))
}

// providerRequest builds the model call of a turn for tenant tn, its items
// cut where truncation cut them (truncated); the error is a forced MCP
// tool the server does not offer (forceMCP).
func (r *run) providerRequest(tn string, turn int) (*provider.Request, error) {
	q := &provider.Request{
		Model:             r.resp.Model,
		Instructions:      r.req.Instructions,
		Items:             r.truncated(r.seen()),
		Tools:             r.tools.defList,
		ParallelToolCalls: r.req.ParallelToolCalls,
		MaxOutputTokens:   r.req.MaxOutputTokens,
		Temperature:       r.req.Temperature,
		TopP:              r.req.TopP,
		PresencePenalty:   r.req.PresencePenalty,
		FrequencyPenalty:  r.req.FrequencyPenalty,
		TopLogprobs:       r.req.TopLogprobs,
		Text:              r.req.Text,
		User:              r.providerUser(tn),
		PromptCacheKey:    tenantScoped(tn, r.req.PromptCacheKey),
		ServiceTier:       r.req.ServiceTier,
	}
	if r.req.Reasoning != nil && r.req.Reasoning.Effort != nil {
		q.ReasoningEffort = *r.req.Reasoning.Effort
	}
	// A forced MCP tool is checked even when the model is offered no tool
	// at all: forceMCP refuses it then (its server offers none).
	c := r.req.ToolChoice
	if len(r.tools.defList) > 0 || turn == 0 && c != nil && c.Type == api.ToolMCP {
		q.ToolChoice = r.toolChoiceMode()
		// A forced or required choice applies to the first model call of a
		// response only; afterwards the model must be free to answer.
		// With an output tool the answer is a call: "required" stays (a
		// forced function is forced only once).
		switch {
		case turn > 0 && q.ToolChoice == api.ToolChoiceRequired:
			if !r.att.keepsRequired() {
				q.ToolChoice = api.ToolChoiceAuto
			}
		case c != nil && c.Type == api.ToolMCP:
			if err := r.tools.forceMCP(q, c); err != nil {
				return nil, err
			}
		case c != nil && c.Forced():
			q.ForcedTool = r.tools.forcedName(c)
		}
	}
	return q, nil
}

// plannedCall is a tool call with what will happen to it.
type plannedCall struct {
	call tools.ToolCall
	exec tools.ToolExecutor
	// errText, when set, is fed back as an is_error result without running.
	errText string
	client  bool
	// ends marks a call that ends the attempt's iterations (output tool
	// without reflection, submit): endIterations answers it after the
	// turn's other calls.
	ends bool
	// kind is the ToolCall.Kind of a call an executor runs.
	kind string
}

// limited reports whether a tool of kind counts toward max_tool_calls: the
// output tool's reflection does not (the gateway's step of the attempts
// loop, like its validators and submit), or a response at its limit could
// never hand in its output.
func limited(kind string) bool { return kind != ToolKindReflection }

// counted reports whether p is an executed call max_tool_calls counts.
func (p *plannedCall) counted() bool { return p.exec != nil && limited(p.kind) }

// toolCall is the call of tool name with args that item id of r makes,
// for its executor: the tool's function learns the response and its
// tenant (ctx's).
func (r *run) toolCall(ctx context.Context, id, name, args string) tools.ToolCall {
	return tools.ToolCall{ID: id, Name: name, Arguments: args, ResponseID: r.resp.ID, Tenant: tenant.From(ctx)}
}

// plan decides, for each call, which executor runs it (the hosted tool's),
// or whether the client must (a function tool), or which error is fed
// back (arguments that do not match the tool's input schema: argcheck.go).
// unanswered marks calls left without output by a previous response:
// client calls among them get an error result instead of pausing again.
func (e *Engine) plan(ctx context.Context, r *run, calls []api.Item, unanswered bool) []plannedCall {
	plans := make([]plannedCall, len(calls))
	for i, c := range calls {
		p := plannedCall{call: r.toolCall(ctx, callKey(&c), c.Name, c.Arguments)}
		name := r.tools.modelName(&c)
		t, ok := r.tools.defs[name]
		switch {
		case !ok:
			p.errText = fmt.Sprintf("Error: tool %q does not exist. Available tools: %s.", name, r.tools.names())
		case !t.serves(&c):
			p.errText = fmt.Sprintf("Error: tool %q of %q is not available in this request, so the call did not run.", c.Name, c.ServerLabel)
		case !r.tools.filter.Allowed(name):
			p.errText = fmt.Sprintf("Error: tool %q is not allowed for this request.", name)
		case c.Type == api.ItemMCPApprovalRequest:
			p.client = true // the client approves or denies it
		case t.ends:
			p.ends, p.kind = true, t.kind
		case t.exec == nil && unanswered:
			p.errText = fmt.Sprintf("Error: no output was provided for the call to %q (call_id %s).", c.Name, c.CallID)
		case t.exec == nil:
			p.client = true
		case r.req.MaxToolCalls != nil && limited(t.kind) && r.tools.hostedCalls >= *r.req.MaxToolCalls:
			p.errText = fmt.Sprintf("Error: the limit of %d tool calls for this response was reached; answer with what you have.", *r.req.MaxToolCalls)
		default:
			if p.errText = e.argumentsError(ctx, t.args, name, c.Arguments); p.errText != "" {
				break // the tool does not run
			}
			p.exec, p.kind = t.exec, t.kind
			if p.counted() {
				r.tools.hostedCalls++
			}
		}
		plans[i] = p
	}
	return plans
}

// maxConcurrentCalls is how many calls of one turn run at once: a model
// may ask for hundreds in one turn (fetch 200 pages), each holding a
// goroutine, a connection and its reply's buffer (fetch_url reads up to
// 1 MiB) while in flight; the others wait for a slot.
const maxConcurrentCalls = 32

// runTools executes a turn's tool calls: when any must run on the client,
// the whole turn pauses (only calls that cannot run get their error
// results); otherwise every executable call runs, concurrently (at most
// maxConcurrentCalls at a time) unless parallel_tool_calls is false, and
// the results are appended in call order.
// iteration is the model call that asked for the calls (ToolCall.Iteration).
func (e *Engine) runTools(ctx context.Context, r *run, calls []api.Item, unanswered bool, iteration int) (outcome, bool) {
	plans := e.plan(ctx, r, calls, unanswered)
	pause, hosted, counted, validates := false, 0, 0, false
	for _, p := range plans {
		if p.client {
			pause = true
		}
		if p.exec != nil {
			hosted++
		}
		if p.counted() {
			counted++
		}
		validates = validates || p.ends && r.att.runsValidators()
	}
	if !pause && (hosted > 0 || validates) && !r.budget.fits(r.budget.maxTools) {
		// The calls stay unanswered; a continuation runs them.
		r.tools.hostedCalls -= counted
		return outcome{status: api.StatusIncomplete, reason: api.ReasonDeadline}, true
	}
	results := make([]*tools.ToolResult, len(plans))
	tctx, cancel := r.budget.bound(ctx)
	defer cancel()
	start := e.cfg.Now()
	var wg sync.WaitGroup
	parallel := r.req.ParallelToolCalls == nil || *r.req.ParallelToolCalls
	slots := make(chan struct{}, maxConcurrentCalls)
	var done completions
	for i := range plans {
		p := &plans[i]
		switch {
		case p.errText != "":
			results[i] = &tools.ToolResult{CallID: p.call.ID, Output: p.errText, IsError: true}
		case p.client, p.ends:
		case pause:
			// Server-side calls of a paused turn run when it continues.
			if p.counted() {
				r.tools.hostedCalls--
			}
		case parallel:
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				results[i] = done.record(r, &calls[i], e.execute(tctx, r, p, iteration))
			}()
		default:
			results[i] = done.record(r, &calls[i], e.execute(tctx, r, p, iteration))
		}
	}
	wg.Wait()
	r.toolsTook(e.cfg.Now().Sub(start))
	for i, res := range results {
		if res != nil {
			r.recordResult(&calls[i], res)
		}
	}
	if !pause && r.att != nil {
		e.endIterations(ctx, r, calls, plans, iteration)
	}
	if pause {
		return outcome{status: api.StatusRequiresAction}, true
	}
	if ctx.Err() != nil {
		return outcome{status: api.StatusCancelled}, true
	}
	if r.att.ended() {
		return e.afterAttempt(ctx, r)
	}
	return outcome{}, false
}

// completions completes the mcp_call items of a turn's calls as each call
// ends, so that a stream shows a fast call done while a slow one of its
// turn still runs; the other results are recorded, in call order, once
// every call has ended (a function_call_output is a new item: output
// indexes follow the calls).
type completions struct{ mu sync.Mutex }

// record completes call's mcp_call item with res at once when the item is
// in the output (and returns nil: recorded), else returns res for later.
func (c *completions) record(r *run, call *api.Item, res *tools.ToolResult) *tools.ToolResult {
	if call.Type != api.ItemMCPCall {
		return res
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.outputIndex(call.ID) < 0 {
		return res
	}
	r.completeServerCall(call, res)
	return nil
}

// recordResult shows res as the result of call: an mcp_call item is
// completed, a function call gets its function_call_output item.
func (r *run) recordResult(call *api.Item, res *tools.ToolResult) {
	if call.Type == api.ItemMCPCall {
		r.completeServerCall(call, res)
		return
	}
	idx := len(r.resp.Output)
	r.resp.Output = append(r.resp.Output, api.Item{Type: api.ItemFunctionCallOutput, ID: r.newItemID(api.PrefixFuncOutput), Status: api.ItemCompleted, CallID: res.CallID, Output: res.Output, IsError: res.IsError})
	it := &r.resp.Output[idx]
	r.em.itemEvent(api.EventOutputItemAdded, idx, it)
	r.em.itemEvent(api.EventOutputItemDone, idx, it)
}

// execute runs one call on its executor; every failure becomes an
// is_error result. The observer (the operator's hooks) sees it before and
// after (observed).
func (e *Engine) execute(ctx context.Context, r *run, p *plannedCall, iteration int) *tools.ToolResult {
	return e.observed(ctx, r, p, iteration, func(ctx context.Context) *tools.ToolResult { return e.invoke(ctx, p) })
}

// invoke runs p on its executor.
func (e *Engine) invoke(ctx context.Context, p *plannedCall) *tools.ToolResult {
	res, err := p.exec.Execute(ctx, p.call)
	if err == nil && res == nil {
		err = errors.New("the tool returned no result")
	}
	if err != nil {
		e.log.WarnContext(ctx, "tool call failed", "tool", p.call.Name, "call_id", p.call.ID, "response_id", p.call.ResponseID, "err", err)
		return &tools.ToolResult{CallID: p.call.ID, Output: "Error: " + err.Error(), IsError: true}
	}
	if res.IsError {
		e.log.InfoContext(ctx, "tool returned an error", "tool", p.call.Name, "call_id", p.call.ID, "response_id", p.call.ResponseID, slog.String("output", textcut.Ellipsis(res.Output, 200)))
	}
	res.CallID = p.call.ID
	return res
}

// pendingCalls returns the tool calls of the conversation that have no
// result yet (neither stored, nor in this request's input, nor in the output
// so far — which a resumed background response already has): function
// calls without a function_call_output, mcp_call items not yet executed,
// and approved mcp_approval_requests not yet run (as the mcp_call that
// runs them). Each function_call_output answers one call of its call_id,
// in order: a model numbering its calls per turn reuses an id, and a call
// after one its output answered is pending. A client call or output held
// twice (the same id: an item sent again) counts once, as the model sees
// it (modelItems).
func (r *run) pendingCalls() []api.Item {
	items := clientItemsOnce(r.history, r.input, r.resp.Output)
	results := map[string]int{} // by callKey: the results not matched to a call yet
	approved := map[string]bool{}
	for _, it := range items {
		switch {
		case api.IsClientOutput(it.Type):
			results[it.CallID]++
		case it.Type == api.ItemMCPCall && it.Executed():
			results[callKey(it)] = 1
		case it.Type == api.ItemMCPApprovalResponse:
			approved[it.ApprovalRequestID] = it.Approve
		}
	}
	var pending []api.Item
	for _, it := range items {
		k := callKey(it)
		switch {
		case api.IsClientCall(it.Type) && results[k] > 0:
			results[k]--
		case api.IsClientCall(it.Type):
			pending = append(pending, *it)
		case it.Type == api.ItemMCPCall && results[k] == 0:
			pending = append(pending, *it)
			results[k] = 1
		case it.Type == api.ItemMCPApprovalRequest && approved[it.ID] && results[k] == 0:
			pending = append(pending, r.approvedCall(it))
			results[k] = 1
		}
	}
	return pending
}

// clientItemsOnce returns the items of lists in order, a client call or
// call output with the id of one before left out.
func clientItemsOnce(lists ...[]api.Item) []*api.Item {
	var out []*api.Item
	seen := map[string]bool{}
	for _, l := range lists {
		for i := range l {
			it := &l[i]
			if (api.IsClientCall(it.Type) || api.IsClientOutput(it.Type)) && it.ID != "" {
				if seen[it.ID] {
					continue
				}
				seen[it.ID] = true
			}
			out = append(out, it)
		}
	}
	return out
}
