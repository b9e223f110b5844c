package engine

import (
	"strings"
	"sync"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// emitter numbers and writes the events of one response. One counter per
// response, safe for concurrent use; a no-op for non-stream requests. When
// the events go out is the writer's business: the transports pace them
// (package pacing).
type emitter struct {
	mu     sync.Mutex
	w      ResponseWriter
	stream bool
	seq    int64
	err    error
	// ev is the lifecycle, item or MCP event being written (mu held),
	// reused for every one: an event is valid only during its write
	// (ResponseWriter).
	ev scratchEvent
	// held is the writer while it holds the stream's opening (opening),
	// nil once the stream opened.
	held openingHolder
	// joining is set while the events written join the held opening
	// rather than open the stream (withOpening).
	joining bool
	// retracted is set once the opening was taken back (retract).
	retracted bool
}

// opening emits the opening of r's stream, response.created and
// response.in_progress, held by a writer that can hold it until the
// stream truly begins: the first model call's provider accepted it
// (open), or any other event is written (but those of withOpening).
func (m *emitter) opening(r *api.Response) {
	if !m.stream {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	oh, _ := m.w.(openingHolder)
	if oh != nil {
		oh.HoldOpening()
	}
	m.lifecycleLocked(api.EventResponseCreated, r)
	m.lifecycleLocked(api.EventResponseInProgress, r)
	m.held = oh
}

// open sends the held opening of the stream: the stream has begun.
func (m *emitter) open() {
	if !m.stream {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.openLocked()
}

// openLocked is open with m.mu held.
func (m *emitter) openLocked() {
	if m.held != nil {
		m.held.Open()
		m.held = nil
	}
}

// withOpening runs fn, whose events (the listing of MCP servers' tools
// before the first model call: the gateway's own step, not the stream's
// beginning) join the held opening of the stream instead of opening it:
// a response refused after them may still be an HTTP error (retract).
func (m *emitter) withOpening(fn func()) {
	m.setJoining(true)
	defer m.setJoining(false)
	fn()
}

// setJoining sets m.joining (withOpening).
func (m *emitter) setJoining(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.joining = on
}

// retract takes back the held opening of a stream nothing of reached the
// client, and reports whether it did (now or in an earlier call): the
// response's failure may then be an HTTP error.
func (m *emitter) retract() bool {
	if !m.stream {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held != nil && m.held.Retract() {
		m.held, m.retracted = nil, true
	}
	return m.retracted
}

// emit stamps ev with the next sequence number and writes it (callers
// check m.stream first, so non-stream requests build no events). After the
// first write error (the client went away) events are dropped; the request
// context's cancellation stops the loop.
func (m *emitter) emit(ev *api.StreamEvent) { m.write(ev, false) }

// emitDelta emits a delta event; more is the model's delta's
// provider.Delta.More: the next event follows at once, so a writer that
// can (a heldWriter) holds this one for it.
func (m *emitter) emitDelta(ev *api.StreamEvent, more bool) { m.write(ev, more) }

func (m *emitter) write(ev *api.StreamEvent, more bool) {
	if !m.stream {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeLocked(ev, more)
}

// writeLocked is write with m.mu held.
func (m *emitter) writeLocked(ev *api.StreamEvent, more bool) {
	ev.SequenceNumber = m.seq
	m.seq++
	if m.err != nil {
		return
	}
	if !m.joining {
		m.openLocked()
	}
	if hw, ok := m.w.(heldWriter); ok && more {
		m.err = hw.WriteHeldEvent(ev)
		return
	}
	m.err = m.w.WriteEvent(ev)
}

// lifecycle emits the lifecycle event typ of r.
func (m *emitter) lifecycle(typ string, r *api.Response) {
	if !m.stream {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lifecycleLocked(typ, r)
}

// lifecycleLocked is lifecycle with m.mu held.
func (m *emitter) lifecycleLocked(typ string, r *api.Response) {
	m.ev.ev = api.StreamEvent{Type: typ, Response: r}
	m.writeLocked(&m.ev.ev, false)
}

// itemEvent emits the item event typ of it, the output item idx.
func (m *emitter) itemEvent(typ string, idx int, it *api.Item) {
	if !m.stream {
		return
	}
	m.indexed(idx, api.StreamEvent{Type: typ, Item: it})
}

// mcpEvent emits one of the response.mcp_call.* events of the item id.
func (m *emitter) mcpEvent(typ string, idx int, id string) {
	if !m.stream {
		return
	}
	m.indexed(idx, api.StreamEvent{Type: typ, ItemID: id})
}

// indexed writes ev, whose output index is idx, as the emitter's reused
// event.
func (m *emitter) indexed(idx int, ev api.StreamEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &m.ev
	e.idx = idx
	e.ev = ev
	e.ev.OutputIndex = &e.idx
	m.writeLocked(&e.ev, false)
}

// assembler turns one model call's deltas into output items, emitting the
// item, content part and delta events as it goes. Streaming and
// non-streaming calls share it: a completed call is replayed as deltas.
type assembler struct {
	r         *run
	reasoning int // output index of the open reasoning item, -1 if none
	message   int // output index of the open message, -1 if none
	part      int // content index of the open part in the message, -1 if none
	calls     []int
	byIndex   map[int]int // provider tool index → position in calls
	// reasoningText and partText collect the text of the open reasoning
	// item and of the open content part (its refusal for a refusal part),
	// which get it when they close: appending to the item's string would
	// copy it all at every delta. args does the same for each call's
	// arguments (by position in calls), which its item gets in finish.
	reasoningText, partText textAcc
	args                    []textAcc
	// waiting is the position in calls of an action call
	// (api.IsActionCall) whose output_item.added waits for its arguments,
	// -1 if none: the event carries the call's action (or operation), as
	// OpenAI's does — the Vercel AI SDK refuses one without it — and the
	// model's arguments are that action. It is emitted when the next item
	// opens (the model has moved on: its calls stream one after another)
	// or the turn ends.
	waiting int
	// ev is the content part or text event being written, reused for
	// every one (an event is valid only during its write: ResponseWriter).
	ev scratchEvent
}

// textAcc collects a text from its deltas: one delta's text (a completed
// call's whole text, replayed) is kept as it is, not copied; from the
// second on they are joined in a builder.
type textAcc struct {
	first string
	b     strings.Builder
	n     int // deltas added
}

func (t *textAcc) add(s string) {
	switch t.n {
	case 0:
		t.first = s
	case 1:
		t.b.Grow(len(t.first) + len(s))
		t.b.WriteString(t.first)
		t.first = ""
		fallthrough
	default:
		t.b.WriteString(s)
	}
	t.n++
}

// String returns the text so far, leaving t as it is.
func (t *textAcc) String() string {
	if t.n > 1 {
		return t.b.String()
	}
	return t.first
}

// take returns the text and empties t.
func (t *textAcc) take() string {
	s := t.first
	if t.n > 1 {
		s = t.b.String()
	}
	t.first, t.n = "", 0
	t.b.Reset()
	return s
}

func newAssembler(r *run) *assembler {
	return &assembler{r: r, reasoning: -1, message: -1, part: -1, waiting: -1}
}

func (a *assembler) out(i int) *api.Item { return &a.r.resp.Output[i] }

// open adds it to the output and emits its output_item.added.
func (a *assembler) open(it api.Item) int {
	idx := a.add(it)
	a.r.em.itemEvent(api.EventOutputItemAdded, idx, a.out(idx))
	return idx
}

// add adds it to the output without an event, after the
// output_item.added of the call waiting for one, and returns its index.
func (a *assembler) add(it api.Item) int {
	a.addWaiting()
	a.r.resp.Output = append(a.r.resp.Output, it)
	return len(a.r.resp.Output) - 1
}

// addWaiting emits the output_item.added of the waiting action call, its
// action made of its arguments so far.
func (a *assembler) addWaiting() {
	if a.waiting < 0 {
		return
	}
	pos := a.waiting
	a.waiting = -1
	it := a.out(a.calls[pos])
	it.Action = callAction(it.Type, a.args[pos].String())
	a.r.em.itemEvent(api.EventOutputItemAdded, a.calls[pos], it)
}

// delta handles one increment of the model's answer.
func (a *assembler) delta(d provider.Delta) error {
	switch d.Kind {
	case provider.DeltaAccepted:
		a.r.em.open()
	case provider.DeltaReasoning:
		if a.reasoning < 0 {
			a.reasoning = a.open(api.Item{Type: api.ItemReasoning, ID: a.r.newItemID(api.PrefixReasoning), Status: api.ItemInProgress})
			it := a.out(a.reasoning)
			it.Content = []api.ContentPart{{Type: api.PartReasoningText}}
			a.partAdded(a.reasoning, 0, api.PartReasoningText)
		}
		it := a.out(a.reasoning)
		if d.Text != "" {
			a.reasoningText.add(d.Text)
			a.textEvent(api.EventReasoningDelta, a.reasoning, 0, d)
		}
		if d.Encrypted != "" {
			// The block is complete: its opaque data goes back with it.
			a.r.keepReasoningState(it, d.Encrypted)
			a.closeReasoning(api.ItemCompleted)
		}
	case provider.DeltaText, provider.DeltaRefusal:
		a.closeReasoning(api.ItemCompleted)
		typ := api.PartOutputText
		if d.Kind == provider.DeltaRefusal {
			typ = api.PartRefusal
		}
		if a.message < 0 {
			a.message = a.open(api.Item{Type: api.ItemMessage, ID: a.r.newItemID(api.PrefixMessage), Status: api.ItemInProgress, Role: api.RoleAssistant, Content: []api.ContentPart{}})
		}
		it := a.out(a.message)
		if a.part >= 0 && it.Content[a.part].Type != typ {
			a.closePart()
		}
		if a.part < 0 {
			a.part = len(it.Content)
			it.Content = append(it.Content, api.ContentPart{Type: typ})
			a.partAdded(a.message, a.part, typ)
		}
		a.partText.add(d.Text)
		if typ == api.PartRefusal {
			a.textEvent(api.EventRefusalDelta, a.message, a.part, d)
		} else {
			a.textEvent(api.EventOutputTextDelta, a.message, a.part, d)
		}
	case provider.DeltaToolCall:
		a.closeReasoning(api.ItemCompleted)
		a.closeMessage(api.ItemCompleted)
		pos, ok := a.byIndex[d.ToolIndex]
		if !ok {
			if a.byIndex == nil {
				a.byIndex = map[int]int{}
			}
			var idx int
			// The first call of the turn is marked: the turn's calls are
			// replayed to the model together (modelItems).
			hidden := api.ItemHidden{TurnStart: len(a.calls) == 0}
			if typ, label, tool := a.r.serverItem(d.ToolName); typ != "" {
				prefix := api.PrefixMCPCall
				if typ == api.ItemMCPApprovalRequest {
					prefix = api.PrefixMCPApprovalRequest
				}
				hidden.ModelCallID = d.ToolCallID
				idx = a.open(api.Item{Type: typ, ID: a.r.newItemID(prefix), Status: api.ItemInProgress, ServerLabel: label, Name: tool, Hidden: hidden})
				if typ == api.ItemMCPCall {
					a.r.em.mcpEvent(api.EventMCPCallInProgress, idx, a.out(idx).ID)
				}
			} else {
				callID := d.ToolCallID
				if callID == "" {
					callID = api.NewCallID()
				}
				it := a.r.clientItem(d.ToolName, callID)
				it.Hidden = hidden
				if api.IsActionCall(it.Type) {
					idx = a.add(it)
					a.waiting = len(a.calls)
				} else {
					idx = a.open(it)
				}
			}
			pos = len(a.calls)
			a.calls = append(a.calls, idx)
			a.args = append(a.args, textAcc{})
			a.byIndex[d.ToolIndex] = pos
		}
		idx := a.calls[pos]
		it := a.out(idx)
		if it.Name == "" && d.ToolName != "" {
			it.Name = d.ToolName
		}
		if it.Type != api.ItemFunctionCall && it.Hidden.ModelCallID == "" && d.ToolCallID != "" {
			it.Hidden.ModelCallID = d.ToolCallID
		}
		if d.Text != "" {
			a.args[pos].add(d.Text)
			// Only function and MCP calls have argument events: an
			// approval request is done with its arguments, the other
			// client calls are completed from theirs (finishClientItem).
			switch it.Type {
			case api.ItemFunctionCall:
				a.textEvent(api.EventFunctionCallArgsDelta, idx, -1, d)
			case api.ItemMCPCall:
				a.textEvent(api.EventMCPCallArgsDelta, idx, -1, d)
			}
		}
	}
	return nil
}

// partAdded emits response.content_part.added of the empty part of type
// typ, the content part part of the output item idx.
func (a *assembler) partAdded(idx, part int, typ string) {
	if a.r.em.stream {
		a.ev.p = api.ContentPart{Type: typ}
		a.partEvent(api.EventContentPartAdded, idx, part, &a.ev.p)
	}
}

func (a *assembler) partEvent(typ string, idx, part int, p *api.ContentPart) {
	if a.r.em.stream {
		e := &a.ev
		e.idx, e.part = idx, part
		e.ev = api.StreamEvent{Type: typ, ItemID: a.out(idx).ID, OutputIndex: &e.idx, ContentIndex: &e.part, Part: p}
		a.r.em.emit(&e.ev)
	}
}

// scratchEvent is an event with the values its pointers point to, so that
// one (the emitter's, the assembler's) serves every event of its kind
// without allocating.
type scratchEvent struct {
	ev        api.StreamEvent
	idx, part int
	text      string
	p         api.ContentPart
	// logprobs is the empty log probabilities of a text event (OpenAI's
	// "logprobs": [] when none were asked for).
	logprobs []any
}

// textEvent emits the delta event typ of d's text for the content part
// part of the output item idx, or, with part < 0, for the item itself (a
// call's arguments).
func (a *assembler) textEvent(typ string, idx, part int, d provider.Delta) {
	if a.r.em.stream {
		e := &a.ev
		e.idx, e.part, e.text = idx, part, d.Text
		e.ev = api.StreamEvent{Type: typ, ItemID: a.out(idx).ID, OutputIndex: &e.idx, Delta: &e.text}
		if part >= 0 {
			e.ev.ContentIndex = &e.part
		}
		if typ == api.EventOutputTextDelta {
			e.logprobs = []any{}
			e.ev.Logprobs = &e.logprobs
		}
		a.r.em.emitDelta(&e.ev, d.More)
	}
}

// closeReasoning closes the open reasoning item, if any, with status
// status (incomplete when the turn was cut while the model reasoned).
func (a *assembler) closeReasoning(status string) {
	if a.reasoning < 0 {
		return
	}
	idx := a.reasoning
	a.reasoning = -1
	it := a.out(idx)
	it.Content[0].Text = a.reasoningText.take()
	if a.r.em.stream {
		e := &a.ev
		e.idx, e.part, e.text = idx, 0, it.Content[0].Text
		e.ev = api.StreamEvent{Type: api.EventReasoningDone, ItemID: it.ID, OutputIndex: &e.idx, ContentIndex: &e.part, Text: &e.text}
		a.r.em.emit(&e.ev)
	}
	a.partEvent(api.EventContentPartDone, idx, 0, &it.Content[0])
	a.summarize(idx, it)
	it.Status = status
	a.r.em.itemEvent(api.EventOutputItemDone, idx, it)
}

// takePart gives the open content part its text and returns it with its
// message's output index and its content index; nil when no part is open.
func (a *assembler) takePart() (p *api.ContentPart, idx, part int) {
	if a.part < 0 {
		return nil, -1, -1
	}
	idx, part = a.message, a.part
	a.part = -1
	p = &a.out(idx).Content[part]
	if p.Type == api.PartRefusal {
		p.Refusal = a.partText.take()
	} else {
		p.Text = a.partText.take()
	}
	return p, idx, part
}

func (a *assembler) closePart() {
	p, idx, part := a.takePart()
	if p == nil {
		return
	}
	it := a.out(idx)
	if a.r.em.stream {
		e := &a.ev
		e.idx, e.part = idx, part
		e.logprobs = []any{}
		e.ev = api.StreamEvent{Type: api.EventOutputTextDone, ItemID: it.ID, OutputIndex: &e.idx, ContentIndex: &e.part, Text: &p.Text,
			Logprobs: &e.logprobs}
		if p.Type == api.PartRefusal {
			e.ev = api.StreamEvent{Type: api.EventRefusalDone, ItemID: it.ID, OutputIndex: &e.idx, ContentIndex: &e.part, Refusal: &p.Refusal}
		}
		a.r.em.emit(&e.ev)
	}
	a.partEvent(api.EventContentPartDone, idx, part, p)
}

func (a *assembler) closeMessage(status string) {
	if a.message < 0 {
		return
	}
	a.closePart()
	idx := a.message
	a.message = -1
	it := a.out(idx)
	it.Status = status
	a.r.em.itemEvent(api.EventOutputItemDone, idx, it)
}

// finish closes every open item of the turn and returns the function_call,
// mcp_call and mcp_approval_request items it produced, in order. An mcp_call of a completed turn
// stays open until its tool has answered (completeServerCall) or the turn
// ends without running it (closeOpenCalls). itemStatus is the status of
// the turn's last item (incomplete when the turn was cut; a reasoning item
// still open is one the model was emitting); the items before it were
// whole (completed): an incomplete item is the last one emitted
// (OpenResponses, "Items"). An incomplete call, its arguments possibly
// cut, is marked cut (api.ItemHidden.Cut) like abandon's.
func (a *assembler) finish(itemStatus string) []api.Item {
	a.addWaiting()
	last := max(a.reasoning, a.message)
	for _, idx := range a.calls {
		last = max(last, idx)
	}
	statusOf := func(idx int) string {
		if idx == last {
			return itemStatus
		}
		return api.ItemCompleted
	}
	a.closeReasoning(statusOf(a.reasoning))
	a.closeMessage(statusOf(a.message))
	calls := make([]api.Item, 0, len(a.calls))
	for pos, idx := range a.calls {
		itemStatus := statusOf(idx)
		it := a.out(idx)
		// A call the cut ended inside is marked cut, as abandon marks a
		// failed call's: a continuation and a conversation leave it out.
		it.Arguments, it.Hidden.Cut = a.args[pos].take(), itemStatus == api.ItemIncomplete
		if it.Arguments == "" {
			it.Arguments = "{}"
		}
		if it.Type == api.ItemMCPApprovalRequest {
			it.Status = itemStatus
			a.r.em.itemEvent(api.EventOutputItemDone, idx, it)
			calls = append(calls, *it)
			continue
		}
		if it.Type == api.ItemMCPCall {
			if a.r.em.stream {
				i, args := idx, it.Arguments
				a.r.em.emit(&api.StreamEvent{Type: api.EventMCPCallArgsDone, ItemID: it.ID, OutputIndex: &i, Arguments: &args})
			}
			if itemStatus != api.ItemCompleted {
				it.Status = itemStatus
				a.r.em.itemEvent(api.EventOutputItemDone, idx, it)
			}
			calls = append(calls, *it)
			continue
		}
		if !a.finishClientItem(idx, it) && a.r.em.stream {
			i, args := idx, it.Arguments
			a.r.em.emit(&api.StreamEvent{Type: api.EventFunctionCallArgsDone, ItemID: it.ID, OutputIndex: &i, Arguments: &args})
		}
		it.Status = cutStatus(it.Type, itemStatus)
		a.r.em.itemEvent(api.EventOutputItemDone, idx, it)
		calls = append(calls, *it)
	}
	return calls
}

// abandon ends the turn of a model call that failed or was cancelled (a
// cancel request, the client gone): the items it left open were cut, so
// they keep status in_progress, with what the model had sent, and get no
// done events. A client acts on an item's output_item.done — Codex runs
// the call (with half its arguments), shows the text as an answer, and
// replays both when it retries the turn. None of its calls runs, and
// they are marked cut (api.ItemHidden.Cut): their mcp_call items get no
// done event either (closeOpenCalls), and a continuation and a
// conversation leave them out, so the model never gets back half their
// arguments. The text stays: the model gets what it had written.
func (a *assembler) abandon() {
	a.addWaiting()
	if a.reasoning >= 0 {
		a.out(a.reasoning).Content[0].Text = a.reasoningText.take()
		a.reasoning = -1
	}
	a.takePart()
	a.message = -1
	for pos, idx := range a.calls {
		it := a.out(idx)
		it.Arguments, it.Hidden.Cut = a.args[pos].take(), true
	}
	a.calls = nil
}

// replay feeds a completed model call through the assembler.
func (a *assembler) replay(res *provider.Result) {
	for _, b := range res.ReasoningBlocks {
		_ = a.delta(provider.Delta{Kind: provider.DeltaReasoning, Text: b.Text, Encrypted: b.Encrypted})
	}
	if res.Reasoning != "" && len(res.ReasoningBlocks) == 0 {
		_ = a.delta(provider.Delta{Kind: provider.DeltaReasoning, Text: res.Reasoning})
	}
	if res.Text != "" {
		_ = a.delta(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
	}
	if res.Refusal != "" {
		_ = a.delta(provider.Delta{Kind: provider.DeltaRefusal, Text: res.Refusal})
	}
	for i, c := range res.ToolCalls {
		_ = a.delta(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments})
	}
}
