package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

// run is the state of one response being created: the conversation, the
// tools, the loop's progress and what writes its output. The concerns the
// loop does not own hang off it by one field each: validated output (att,
// attempts.go) and a background run's checkpoints (checkpoint, lease.go).
type run struct {
	req  *api.CreateResponseRequest
	resp *api.Response
	// history is the conversation before this request's input.
	history []api.Item
	// input is this request's input, references resolved and ids assigned.
	input []api.Item
	// conv is the conversation the response runs in (conversation.go);
	// nil when none.
	conv *runConversation
	// summaries are the opened contents of the conversation's compaction
	// items, by blob (openSummaries).
	summaries map[string]summary
	// counted is the provider's count (input and output tokens) of the
	// latest model call whose view starts what the model sees now, 0 when
	// none; countedOutput is the length of the output when it was taken,
	// -1 for a count of the previous response (servercompact.go).
	counted, countedOutput int
	// tools are the response's tools (toolset.go).
	tools toolset

	// em writes the response's events; asm turns the current model call's
	// deltas into output items (emit.go).
	em  *emitter
	asm *assembler
	// budget is the time left before the deadline (budget.go); timing
	// is where the response's time went (timing.go).
	budget *budget
	timing timing
	// obs observes the loop; nil when Config.Observer is (see observe).
	obs ResponseObserver
	// turns counts the model calls that answered, over every invocation
	// of a background response (the turn limit bounds it; a run that stops
	// before its turn's tool calls has counted the turn); modelCalls is the
	// number of the last model call made (one more than turns when that
	// call failed).
	turns, modelCalls int

	// cut is the id of the item where truncation "auto" cut what the
	// model sees (the droppable items before it left out: truncation.go),
	// for every later model call of the run, stored with the response
	// (store.Record.Cut) and its conversation; empty: nothing cut.
	cut string

	// att is the validated-output state (attempts.go); nil when the
	// response validates no output.
	att *attempts
	// checkpoint, set for a background run (claim.checkpoint), runs
	// before every model call; an error fails the response.
	checkpoint func() error
	// rec is the response's record as record last filled it.
	rec store.Record

	// modelSteps counts the items modelItems visits (its pass over the
	// conversation, and placing results and denials); tests check it grows
	// linearly with the conversation.
	modelSteps int
}

// record returns the record of r's response as the store keeps it (its
// input and stored context), in r's own Record, which every call fills
// anew: checkSize and save hand it to the store and the connection's
// cache, which copy or encode it and keep no reference to it, and r is
// done with once saved, so a request allocates no Record for them.
func (r *run) record() *store.Record {
	r.rec = store.Record{Response: r.resp, Input: r.input, Context: r.storedContext(), Cut: r.storedCut(), Rendered: r.storedRendered()}
	return &r.rec
}

// mcpItems reports whether server-executed calls appear as mcp_call items.
func (e *Engine) mcpItems() bool {
	return e.cfg.Loop.HostedToolItems == HostedItemsMCPCall && e.cfg.Hosted != nil
}

// prepare validates req against the stored conversation and builds the run.
// id is the response's id, empty for a new one; cache is the connection's
// (nil: none), which previous_response_id is looked up in first. Every
// error is an *api.Error: a client error, or a server error when the store
// fails.
func (e *Engine) prepare(ctx context.Context, req *api.CreateResponseRequest, id string, cache ConnectionCache) (*run, error) {
	return e.prepareRun(ctx, req, id, cache, true)
}

// prepareRun is prepare; lock takes the lock of the request's conversation
// (openConversation), which a run that appends nothing to it (a token
// count) reads without.
func (e *Engine) prepareRun(ctx context.Context, req *api.CreateResponseRequest, id string, cache ConnectionCache, lock bool) (_ *run, err error) {
	if err := e.checkRequest(req); err != nil {
		return nil, err
	}
	if _, ok := req.CompactThreshold(); (ok || req.CompactNow) && e.cfg.Compaction == nil {
		err := compactionUnavailable()
		err.Param = "context_management"
		if !ok {
			err.Param = "input"
		}
		return nil, err
	}
	model := req.Model
	if model == "" {
		model = e.cfg.DefaultModel
	}
	if model == "" {
		return nil, api.InvalidRequest("model", "missing required parameter: 'model'")
	}
	// The response id comes first: the ids of the input items carry it.
	r := &run{req: req, resp: e.newResponse(req, model), tools: toolset{mcpItems: e.mcpItems()}}
	if id != "" {
		r.resp.ID = id
	}
	// prevOutput is the previous response's output, the items validated
	// output set aside included, which its conversation leaves out.
	var prevOutput []api.Item
	if req.PreviousResponseID != "" {
		rec, err := e.previous(ctx, cache, req.PreviousResponseID)
		if err != nil {
			return nil, err
		}
		if !rec.Response.Status.Terminal() {
			return nil, api.InvalidRequest("previous_response_id", "Previous response '%s' is still %s; continue it once it has finished.", req.PreviousResponseID, rec.Response.Status)
		}
		r.history, prevOutput = rec.Conversation(), rec.Response.Output
		r.startCut(rec.Cut)
		r.startCount(rec.Rendered)
	}
	if req.Conversation != "" {
		if err := e.openConversation(ctx, r, lock); err != nil {
			return nil, err
		}
		// Refused: the conversation's lock is released.
		defer func() {
			if err != nil {
				e.endConversation(ctx, r)
			}
		}()
	}
	if err := e.resolveInput(ctx, r, prevOutput); err != nil {
		return nil, err
	}
	if err := e.openView(ctx, r); err != nil {
		return nil, err
	}
	if err := r.checkApprovals(); err != nil {
		return nil, err
	}
	if err := r.resolveTools(e); err != nil {
		return nil, err
	}
	r.reportUnserved(ctx, e)
	r.resp.Tools = r.echoTools()
	return r, nil
}

// resolveInput resolves item references, checks that every
// function_call_output answers a call of the conversation and that no two
// input items have one id (references resolved), as OpenAI does, and
// assigns ids. A reference resolves to an item of the previous_response_id
// chain (read already: the history, and the items of prevOutput, the
// previous response's output, that validated output set aside), else to an
// item of the stored response its id names (see fetchReferenced); it
// becomes that item, id included, shown as input is (not set aside). A
// client call or call output sent again without its id (see sentAgain)
// becomes the conversation's item too, or is left out when an earlier
// input item is that item.
func (e *Engine) resolveInput(ctx context.Context, r *run, prevOutput []api.Item) error {
	calls := map[string]bool{}
	byID := map[string]*api.Item{}
	sent := newSentItems()
	for i := range r.history {
		it := &r.history[i]
		if it.ID != "" {
			again := byID[it.ID] != nil
			byID[it.ID] = it
			if again {
				// An item the chain holds twice (a call a continuation
				// sent again, stored in its input too) is one item.
				continue
			}
		}
		if api.IsClientCall(it.Type) {
			calls[it.CallID] = true
		}
		if k, ok := sentKeyOf(it); ok {
			sent.add(k, it, true)
		}
	}
	for i := range prevOutput {
		if it := &prevOutput[i]; it.Hidden.Aside {
			byID[it.ID] = it
		}
	}
	if err := e.fetchReferenced(ctx, r.req, byID); err != nil {
		return err
	}
	r.input = make([]api.Item, 0, len(r.req.Input))
	given := make(map[string]bool, len(r.req.Input)) // the ids of the input items so far
	for i, it := range r.req.Input {
		if it.Type == api.ItemReference {
			ref, ok := byID[it.ID]
			if !ok {
				return api.InvalidRequest(inputParam(i, "id"), "Item with id '%s' not found.", it.ID)
			}
			it = *ref
			it.Hidden.Aside = false
		}
		switch {
		case api.IsClientCall(it.Type):
			calls[it.CallID] = true
		case resultMissing(&it):
			// Clients send executed calls back, some without the output
			// (the Agents SDK, which says "completed"): the stored item has
			// it. A call Lambent never stored is shown to the model as one
			// whose result is unknown, unless the client says it completed.
			if ref, ok := byID[it.ID]; ok && ref.Type == api.ItemMCPCall {
				it = *ref
			} else if !it.Executed() {
				it.Status, it.Error = api.ItemFailed, "The result of this call is not available."
			}
		case api.IsClientOutput(it.Type):
			if !calls[it.CallID] {
				if r.req.PreviousResponseID != "" {
					return api.InvalidRequest(inputParam(i, "call_id"), "No tool call found for function call output with call_id '%s' in previous response '%s'.", it.CallID, r.req.PreviousResponseID)
				}
				return api.InvalidRequest(inputParam(i, "call_id"), "No tool call found for function call output with call_id '%s'.", it.CallID)
			}
		}
		if k, ok := sentKeyOf(&it); ok {
			drop, err := sentAgain(sent, k, &it, i)
			if err != nil {
				return err
			}
			if drop {
				continue
			}
		}
		if given[it.ID] {
			return api.InvalidRequestCode(inputParam(i, "id"), "duplicate_item_id", "Duplicate item found with id %s. Remove duplicate items from your input and try again.", it.ID)
		}
		if it.ID == "" {
			it.ID = r.newItemID(api.ItemIDPrefix(it.Type))
		}
		given[it.ID] = true
		if it.Status == "" {
			it.Status = api.ItemCompleted
		}
		r.input = append(r.input, it)
	}
	return nil
}

// sentKey names a client call (output false) or its output by the call's
// id: the conversation holds one of each per call id.
type sentKey struct {
	callID string
	output bool
}

// sentKeyOf is the sentKey of it, a client call or call output; false for
// any other item.
func sentKeyOf(it *api.Item) (sentKey, bool) {
	switch {
	case api.IsClientCall(it.Type):
		return sentKey{callID: it.CallID}, true
	case api.IsClientOutput(it.Type):
		return sentKey{callID: it.CallID, output: true}, true
	}
	return sentKey{}, false
}

// sentItem is a client call or call output of a sentKey the continued
// conversation holds (held, until an input item is recognised as it),
// else an item of the request's input.
type sentItem struct {
	item api.Item
	held bool
}

// sentForm names the items of a sentKey that are the same but for their
// ids and statuses (formOf): the key and a hash of the item's form.
type sentForm struct {
	sentKey
	sum [sha256.Size]byte
}

// sentItems are the calls and outputs of the continued conversation and of
// the request's input so far, by key: a model that numbers its calls per
// turn issues one call id in several turns, so a key may name several.
// An item is looked up by its form (first: the first item of each), so
// that recognising n items sent again takes work linear in n, however
// many share a call_id. A key's forms are computed only once a second
// item of the key comes (pending until then): most keys name one item,
// which nothing is compared with (a stateless client such as Codex replays
// every call and output of its session on every turn).
type sentItems struct {
	count map[sentKey]int
	// pending are the items of the keys not indexed yet: a key with items
	// and none pending is indexed.
	pending map[sentKey][]*sentItem
	first   map[sentForm]*sentItem
}

// newSentItems returns an empty sentItems.
func newSentItems() sentItems {
	return sentItems{count: map[sentKey]int{}, pending: map[sentKey][]*sentItem{}, first: map[sentForm]*sentItem{}}
}

// indexed reports whether the forms of k's items are computed.
func (s sentItems) indexed(k sentKey) bool { return s.count[k] > 0 && s.pending[k] == nil }

// add records it under k: held, an item of the continued conversation.
func (s sentItems) add(k sentKey, it *api.Item, held bool) {
	e := &sentItem{item: *it, held: held}
	if s.indexed(k) {
		s.index(k, e)
	} else {
		s.pending[k] = append(s.pending[k], e)
	}
	s.count[k]++
}

// index adds e, an item of k, to the forms, unless an item of its form
// came before it.
func (s sentItems) index(k sentKey, e *sentItem) {
	if f, ok := formOf(k, &e.item); ok && s.first[f] == nil {
		s.first[f] = e
	}
}

// indexKey computes the forms of k's pending items, in the order they
// came; k's later items are indexed as they come.
func (s sentItems) indexKey(k sentKey) {
	for _, e := range s.pending[k] {
		s.index(k, e)
	}
	delete(s.pending, k)
}

// unanswered reports whether a call of id has no output yet.
func (s sentItems) unanswered(id string) bool {
	return s.count[sentKey{callID: id}] > s.count[sentKey{callID: id, output: true}]
}

// sentAgain looks up it, a client call or call output of the request's
// input (input item i), in sent by its key k. An item sent holds already,
// the same but for its id and status (and a call's arguments written
// anew: formOf), was sent again (a client that keeps its own history,
// without the id): it becomes the conversation's item (not stored again,
// shown to the model once), or it is dropped (true) when an earlier input
// item is that item. An output while a call of its id waits for one is
// that call's answer, whatever it reads: a model numbering its calls per
// turn reuses an id, and a tool may answer two of its calls alike. Any
// other item is new, and added to sent: an output answers a call of its id
// that has none, and a call takes an id whose calls are all answered. A
// new output for a call answered already, or a new call of an id whose
// call waits for its output, is a 400 naming its call_id: every provider
// wants one output per call, and which counts would be a guess.
func sentAgain(sent sentItems, k sentKey, it *api.Item, i int) (drop bool, err error) {
	// An output while a call of its id waits for one is that call's answer,
	// even when it reads as an earlier call's (a tool answering "ok" each
	// time): a resent output never leaves a call unanswered.
	if !k.output || !sent.unanswered(it.CallID) {
		if drop, found := sent.again(k, it); found {
			return drop, nil
		}
	}
	switch {
	case k.output && sent.count[k] > 0 && !sent.unanswered(it.CallID):
		return false, api.InvalidRequest(inputParam(i, "call_id"),
			"Duplicate output for call_id '%s': the conversation holds a different output for this call already, and a call is answered once. Send the output unchanged, or not at all.", it.CallID)
	case !k.output && sent.unanswered(it.CallID):
		return false, api.InvalidRequest(inputParam(i, "call_id"),
			"Duplicate call_id '%s': the conversation holds a different call with this call_id already, and a call_id names one call. Send the call unchanged, or not at all.", it.CallID)
	}
	sent.add(k, it, false)
	return false, nil
}

// again looks up it among the items of k sent so far: found, it becomes
// the conversation's item that it repeats (held, then marked as seen), or
// it is to be dropped (drop) when it repeats an earlier input item.
func (s sentItems) again(k sentKey, it *api.Item) (drop, found bool) {
	if s.count[k] == 0 {
		return false, false
	}
	s.indexKey(k)
	f, ok := formOf(k, it)
	prev := s.first[f]
	if !ok || prev == nil {
		return false, false
	}
	if !prev.held {
		return true, true
	}
	*it, prev.held = prev.item, false
	return false, true
}

// formOf is the sentForm of it under k: items are the same but for their
// ids and statuses, and for how a call's arguments are written (JSON
// arguments count as their value: the AI SDK sends the arguments it
// parsed, serialized anew), which a client that resends an item may
// change, when their forms are. False when it cannot be written as JSON
// (it is the same as no other item).
func formOf(k sentKey, it *api.Item) (sentForm, bool) {
	x := *it
	x.ID, x.Status = "", ""
	x.Arguments = canonicalJSON(x.Arguments)
	b, err := json.Marshal(&x)
	if err != nil {
		return sentForm{}, false
	}
	return sentForm{sentKey: k, sum: sha256.Sum256(b)}, true
}

// canonicalJSON is s, a JSON text, written one way (object keys sorted,
// no spaces); s itself when it is no JSON.
func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}

// resultMissing reports whether it, an item of a request's input, is an
// mcp_call without its result (neither output nor error), whatever status
// it gives.
func resultMissing(it *api.Item) bool {
	return it.Type == api.ItemMCPCall && it.Output == "" && it.Error == ""
}

// inputParam is the param of field of the request's input item i, as
// errors name it ("input[2].call_id"; the item itself when field is "").
func inputParam(i int, field string) string {
	p := "input[" + strconv.Itoa(i) + "]"
	if field == "" {
		return p
	}
	return p + "." + field
}

// maxReferenceReads bounds the concurrent store reads of one request's
// item references: the most stored records (up to the store's record size
// each) being read at once.
const maxReferenceReads = 4

// fetchReferenced reads the stored responses that req's item references
// and its mcp_call items sent back without their result (resultMissing)
// name (api.ResponseIDOf) and byID (the previous chain, the conversation)
// does not already resolve, one Get per response and concurrently, and
// adds the items of theirs the request names (from input, output and
// context, in that order) to byID without replacing any: a record is
// dropped as soon as they are copied. A response that is not found
// (absent, expired, deleted, another tenant's: the store is tenant-scoped)
// adds nothing; ids of other forms name no response, and the previous
// response, read already, is not read again. The number the references
// need is checked (checkReferenced) before any is read; the calls' take
// what that limit leaves, in input order, and the calls past it keep what
// the client sent.
func (e *Engine) fetchReferenced(ctx context.Context, req *api.CreateResponseRequest, byID map[string]*api.Item) error {
	if e.cfg.Store == nil {
		return nil
	}
	seen := map[string]bool{req.PreviousResponseID: true}
	wanted := map[string]bool{}
	// named returns the responses the input items that match name and byID
	// does not resolve point into, each once.
	named := func(match func(*api.Item) bool) []referencedResponse {
		var refs []referencedResponse
		for i := range req.Input {
			it := &req.Input[i]
			if it.ID == "" || byID[it.ID] != nil || !match(it) {
				continue
			}
			wanted[it.ID] = true
			if id, ok := api.ResponseIDOf(it.ID); ok && !seen[id] {
				seen[id] = true
				refs = append(refs, referencedResponse{id: id, item: i})
			}
		}
		return refs
	}
	refs := named(func(it *api.Item) bool { return it.Type == api.ItemReference })
	if err := e.checkReferenced(req, refs); err != nil {
		return err
	}
	calls := named(resultMissing)
	room := e.cfg.Limits.ReferencedResponses - len(refs)
	if req.PreviousResponseID != "" {
		room--
	}
	refs = append(refs, calls[:max(0, min(room, len(calls)))]...)
	if len(refs) == 0 {
		return nil
	}
	found := make([][]api.Item, len(refs))
	errs := make([]error, len(refs))
	sem := make(chan struct{}, maxReferenceReads)
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rec, err := e.cfg.Store.Get(ctx, ref.id)
			if err != nil {
				errs[i] = err
				return
			}
			for _, items := range [][]api.Item{rec.Input, rec.Response.Output, rec.Context} {
				for j := range items {
					if wanted[items[j].ID] {
						found[i] = append(found[i], items[j])
					}
				}
			}
		})
	}
	wg.Wait()
	for i, items := range found {
		if errors.Is(errs[i], store.ErrNotFound) {
			continue
		}
		if errs[i] != nil {
			return e.storeErr(errs[i], refs[i].id, "input")
		}
		for j := range items {
			if _, ok := byID[items[j].ID]; !ok {
				byID[items[j].ID] = &items[j]
			}
		}
	}
	return nil
}

// newItemID returns a new id for an item of r's response.
func (r *run) newItemID(prefix string) string { return api.NewItemID(prefix, r.resp.ID) }

// resolveTools turns the request's tools into the definitions the model
// sees, each with who executes it, and the allowed-tools filter. The tool's
// type decides: "function" is client-executed, "lambent:<name>" is hosted
// and resolved through the catalog (or names an MCP server of the
// manifest), "mcp" is an MCP server (whose tools are listed when the loop
// starts, see startMCP).
func (r *run) resolveTools(e *Engine) error {
	hosted := e.cfg.Hosted
	if err := e.checkMCPServers(r.req); err != nil {
		return err
	}
	r.tools.defs = make(map[string]requestTool, len(r.req.Tools))
	for i := range r.req.Tools {
		t := e.served(&r.req.Tools[i])
		p := "tools[" + strconv.Itoa(i) + "]"
		var rt requestTool
		switch {
		case t.IsOutput():
			continue // resolveOutput
		case t.Type == api.ToolFunction:
			rt.def = api.ToolDefinition{Name: t.Name, Parameters: t.Parameters, Strict: t.Strict}
			if t.Description != nil {
				rt.def.Description = *t.Description
			}
		case t.Type == api.ToolCustom:
			r.tools.addClient("", t)
			continue
		case t.Type == api.ToolNamespace:
			continue // below: their names must not take a top-level tool's
		case api.BuiltinKind(t.Type) == api.BuiltinClient:
			continue // below, with the namespaces
		case api.BuiltinKind(t.Type) != "":
			if e.cfg.Builtin.Refuse {
				return api.InvalidRequestCode(p+".type", "unsupported_tool", "This gateway does not run the %q tool; remove it from tools.", t.Type)
			}
			r.tools.unserved = append(r.tools.unserved, t.Type)
			continue
		case t.IsHosted() && e.cfg.MCP.Servers[t.HostedName()] != nil:
			if err := r.tools.addMCP(e, p, e.cfg.MCP.Servers[t.HostedName()]); err != nil {
				return err
			}
			continue
		case t.IsHosted():
			ok := false
			if hosted != nil {
				rt.def, rt.exec, ok = hosted.Lookup(t.HostedName())
			}
			rt.kind = ToolKindHosted
			if !ok || rt.exec == nil {
				return api.InvalidRequestCode(p+".type", "unknown_hosted_tool", "Unknown hosted tool %q: this gateway's tool manifest has no tool named %q.", t.Type, t.HostedName())
			}
			rt.args = e.hostedArgCheck(rt.def)
		case t.Type == api.ToolMCP:
			srv, err := mcpRequestServer(t, p, e.cfg.Limits.MCPToolsPerServer)
			if err == nil {
				err = r.tools.addMCP(e, p, srv)
			}
			if err != nil {
				return err
			}
			continue
		}
		r.tools.add(rt)
	}
	// Namespaces' tools and OpenAI's client tools take names top-level
	// tools have not.
	for i := range r.req.Tools {
		switch t := &r.req.Tools[i]; {
		case t.Type == api.ToolNamespace:
			for j := range t.Tools {
				r.tools.addClient(t.Name, &t.Tools[j])
			}
		case api.BuiltinKind(t.Type) == api.BuiltinClient:
			r.tools.addBuiltinClient(t)
		}
	}
	if err := r.resolveOutput(hosted, e.cfg.Limits.SchemaPatterns); err != nil {
		return err
	}
	names := r.req.AllowedTools
	c := r.req.ToolChoice
	if c != nil && c.Type == api.ToolMCP && !r.tools.knowsServer(c.ServerLabel) {
		return api.InvalidRequest("tool_choice.server_label",
			"tool_choice {\"type\":\"mcp\",\"server_label\":%q} names no MCP server of this request's tools", c.ServerLabel)
	}
	if c != nil && c.Type == "allowed_tools" {
		for i, t := range c.Tools {
			n := t.Name
			switch {
			case t.Type == api.ToolMCP:
				if !r.tools.knowsServer(t.ServerLabel) {
					return api.InvalidRequest("tool_choice.tools["+strconv.Itoa(i)+"].server_label",
						"allowed tool {\"type\":\"mcp\",\"server_label\":%q} names no MCP server of this request's tools", t.ServerLabel)
				}
				r.tools.allowedMCP = append(r.tools.allowedMCP, t)
				continue
			case n == "":
				n = (&api.Tool{Type: t.Type}).HostedName()
			}
			names = append(names, n)
		}
	}
	if len(r.tools.allowedMCP) == 0 {
		r.tools.filter = tools.NewFilter(names)
		return nil
	}
	r.tools.filter = tools.Restricted(names)
	for n, t := range r.tools.defs {
		if t.kind == ToolKindHosted && mcpRefAllows(r.tools.allowedMCP, api.HostedServerLabel, n) {
			r.tools.filter.Allow(n)
		}
	}
	return nil
}

// newResponse builds the in_progress response object echoing the request.
func (e *Engine) newResponse(req *api.CreateResponseRequest, model string) *api.Response {
	resp := &api.Response{
		ID:                api.NewID(api.PrefixResponse),
		AccessPrograms:    req.AccessPrograms.Shown(),
		Object:            "response",
		CreatedAt:         e.cfg.Now().Unix(),
		Status:            api.StatusInProgress,
		Model:             model,
		Output:            []api.Item{},
		Tools:             req.Tools,
		ToolChoice:        api.ToolChoice{Mode: api.ToolChoiceAuto},
		Truncation:        api.TruncationDisabled,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		Text:              api.TextConfig{Format: api.TextFormat{Type: api.FormatText}},
		TopP:              1,
		Temperature:       1,
		Reasoning:         req.Reasoning,
		MaxOutputTokens:   req.MaxOutputTokens,
		MaxToolCalls:      req.MaxToolCalls,
		Store:             req.Stores(),
		Background:        req.Background,
		ServiceTier:       "default",
		Metadata:          req.Metadata,
	}
	if req.PreviousResponseID != "" {
		resp.PreviousResponseID = &req.PreviousResponseID
	}
	if req.Conversation != "" {
		resp.Conversation = &api.ConversationRef{ID: req.Conversation}
	}
	if req.Instructions != "" {
		resp.Instructions = &req.Instructions
	}
	if req.ToolChoice != nil {
		resp.ToolChoice = *req.ToolChoice
	}
	if req.Truncation != "" {
		resp.Truncation = req.Truncation
	}
	if req.Text != nil {
		resp.Text = *req.Text
	}
	if req.TopP != nil {
		resp.TopP = *req.TopP
	}
	if req.Temperature != nil {
		resp.Temperature = *req.Temperature
	}
	if req.PresencePenalty != nil {
		resp.PresencePenalty = *req.PresencePenalty
	}
	if req.FrequencyPenalty != nil {
		resp.FrequencyPenalty = *req.FrequencyPenalty
	}
	if req.TopLogprobs != nil {
		resp.TopLogprobs = *req.TopLogprobs
	}
	if req.ServiceTier != "" && req.ServiceTier != "auto" {
		resp.ServiceTier = req.ServiceTier
	}
	if req.SafetyIdentifier != "" {
		resp.SafetyIdentifier = &req.SafetyIdentifier
	}
	if req.PromptCacheKey != "" {
		resp.PromptCacheKey = &req.PromptCacheKey
	}
	return resp
}
