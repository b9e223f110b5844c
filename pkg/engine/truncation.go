package engine

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// Truncation (docs/api.md, "Truncation"). With truncation "auto", a model
// call the provider refuses because its input exceeds the model's context
// window (provider.CodeContextLengthExceeded), before any of its answer
// reached the client, is made again without the oldest part of what the
// model sees (providerRequest cuts it: truncated). What may be dropped is
// whole items from the beginning (cutPoints): never the instructions, a
// system or developer message, nor the latest user message; never a call
// without its output (nor an output without its call), one call of a turn
// without the others, a reasoning item without what follows it, validated
// output's feedback without the answer it is about; the history never
// starts with a call's output. How much: the provider's numbers when its
// message gives them (overShare), else half of what may still be dropped;
// after maxTruncations refusals, everything that may be. The run keeps the
// cut (run.cut, the id of the first item kept after it: ids are stable,
// indexes are not): its later model calls are cut there too, and so are
// the first calls of what comes after it (startCut): its next invocation
// (a background run's, from the record's store.Record.Cut), a continuation
// (from the previous response's record) and the conversation's next
// response (store.Conversation.Cut). Only the model's view is cut: the
// stored response, its input items and the conversation keep every item.

// maxTruncations is how many times one model call is made again after a
// refusal for its size; the last time drops everything droppable.
const maxTruncations = 3

// truncationMargin is the share of a refused call's size dropped beyond
// the excess the provider's numbers name (overShare): a token is not a
// fixed number of bytes.
const truncationMargin = 0.1

// keptAlways reports whether the model item it is never dropped: a system
// or developer message (the request's prompt, a compaction's summary).
func keptAlways(it *api.Item) bool {
	return it.Type == api.ItemMessage && (it.Role == api.RoleSystem || it.Role == api.RoleDeveloper)
}

// isUserMessage reports whether it is a user message that is no feedback
// of validated output (set aside, api.ItemHidden.Aside).
func isUserMessage(it *api.Item) bool {
	return it.Type == api.ItemMessage && it.Role == api.RoleUser && !it.Hidden.Aside
}

// latestInput is the index of the latest user message of items (the
// request's own input, or the task a tool loop works on), -1 when none.
func latestInput(items []api.Item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if isUserMessage(&items[i]) {
			return i
		}
	}
	return -1
}

// startsTurn reports whether items[p] (p > 0) may be the first item kept
// after a cut (cutPoints): it is no call's output, nor validated
// output's feedback (a user message set aside, which goes with the failed
// answer it is about), it follows no reasoning item (which goes with
// it), and it is no call that follows another call or the assistant's
// text of its turn.
func startsTurn(items []api.Item, p int) bool {
	cur, prev := &items[p], &items[p-1]
	switch {
	case api.IsClientOutput(cur.Type), prev.Type == api.ItemReasoning,
		cur.Type == api.ItemMessage && cur.Role == api.RoleUser && cur.Hidden.Aside:
		return false
	case api.IsClientCall(cur.Type):
		return !api.IsClientCall(prev.Type) && (prev.Type != api.ItemMessage || prev.Role != api.RoleAssistant)
	}
	return true
}

// cutPoints returns, in order, where items (what the model sees) may be
// cut: a cut at p drops the items before p but those kept always
// (keptAlways) and the latest user message. A cut is at the start of a
// turn (startsTurn); up to that message also at a user message, the start
// of an exchange, but never right after one (an answer kept without its
// question), so that a continuation of a response that cut its own tool
// loop keeps that loop's last turns and its answer. A point dropping
// nothing more than the one before it is left out; the last keeps the
// last turn.
func cutPoints(items []api.Item) []int {
	u := latestInput(items)
	var points []int
	fresh := false // an item is dropped by the next point, not by the last
	for p := 1; p < len(items); p++ {
		if p-1 != u && !keptAlways(&items[p-1]) {
			fresh = true
		}
		earlier := p <= u && (isUserMessage(&items[p]) || !isUserMessage(&items[p-1]) && startsTurn(items, p))
		if fresh && (earlier || p > u && startsTurn(items, p)) {
			points = append(points, p)
			fresh = false
		}
	}
	return points
}

// keptItems is items cut at p: without the items before p but those kept
// always and the latest user message, and without the outputs after p
// of the calls before p (unanswered), which go with their calls.
func keptItems(items []api.Item, p int) []api.Item {
	u := latestInput(items)
	orphans := unanswered(items, p)
	kept := make([]api.Item, 0, len(items))
	for i := range items {
		if i < p && (i == u || keptAlways(&items[i])) || i >= p && !orphans[i] {
			kept = append(kept, items[i])
		}
	}
	return kept
}

// unanswered returns the indexes of the outputs at or after p that answer
// a call before p: the error result of a client call a continuation left
// unanswered comes after the continuation's input, a new message. An
// output answers the latest call of its call_id before it (a model may
// number its calls per turn). Nil when there is none.
func unanswered(items []api.Item, p int) map[int]bool {
	var cut map[string]bool // the call ids whose latest call is before p
	var orphans map[int]bool
	for i := range items {
		switch it := &items[i]; {
		case api.IsClientCall(it.Type) && i < p:
			if cut == nil {
				cut = map[string]bool{}
			}
			cut[it.CallID] = true
		case api.IsClientCall(it.Type):
			delete(cut, it.CallID)
		case api.IsClientOutput(it.Type) && i >= p && cut[it.CallID]:
			if orphans == nil {
				orphans = map[int]bool{}
			}
			orphans[i] = true
		}
	}
	return orphans
}

// startCut starts the run's cut at cut, the id of an item where an
// earlier run cut the model's view (a stored cut), when the run's
// truncation is "auto": the setting is the request's, and with
// "disabled" the model gets every item.
func (r *run) startCut(cut string) {
	if r.resp.Truncation == api.TruncationAuto {
		r.cut = cut
	}
}

// storedCut is the run's cut as a response's record and its
// conversation keep it: the id of the first item from the cut's on that
// is not set aside by validated output (api.ItemHidden.Aside), which a
// continuation and the conversation do not carry on with, so that they
// find it; the cut itself when none follows (the run's next invocation
// still has it).
func (r *run) storedCut() string {
	if r.cut == "" {
		return ""
	}
	items := r.seen()
	if at := slices.IndexFunc(items, func(it api.Item) bool { return it.ID == r.cut }); at >= 0 {
		if i := slices.IndexFunc(items[at:], func(it api.Item) bool { return !it.Hidden.Aside }); i >= 0 {
			return items[at+i].ID
		}
	}
	return r.cut
}

// cutAt is the point of points, cut points of items, the run's cut falls
// on: the first at or after its item (a stored cut may name an item no
// cut may fall on now: the conversation grew past it), else the last; 0
// without a cut, without points, or when items no longer hold its item
// (deleted from the conversation: the call is refused and cut again).
func (r *run) cutAt(items []api.Item, points []int) int {
	if r.cut == "" || len(points) == 0 {
		return 0
	}
	at := slices.IndexFunc(items, func(it api.Item) bool { return it.ID == r.cut })
	if at < 0 {
		return 0
	}
	i, _ := slices.BinarySearch(points, at)
	return points[min(i, len(points)-1)]
}

// truncated is items, what the model sees, cut where the run's
// truncation has cut it. The run's cut becomes the item the cut falls on
// (cutAt), the first the model sees after it: none when nothing is cut.
func (r *run) truncated(items []api.Item) []api.Item {
	if r.cut == "" {
		return items
	}
	p := r.cutAt(items, cutPoints(items))
	if p == 0 {
		r.cut = ""
		return items
	}
	r.cut = items[p].ID
	return keptItems(items, p)
}

// cutAgain reports whether the model call q, refused with err, is made
// again cut, and then moves the run's cut on (truncate): with truncation
// "auto", when err is the refusals-th refusal of the call for its size
// (context_length_exceeded), at most maxTruncations, and nothing of the
// call was sent (the output still has outputItems items).
func (r *run) cutAgain(q *provider.Request, err error, refusals, outputItems int) bool {
	var ae *api.Error
	if r.resp.Truncation != api.TruncationAuto || refusals > maxTruncations || len(r.resp.Output) > outputItems ||
		!errors.As(err, &ae) || ae.Code != provider.CodeContextLengthExceeded {
		return false
	}
	return r.truncate(q, ae.Message, refusals)
}

// truncate moves the run's cut on after the provider refused the call q
// for its size with message msg, the refusals-th refusal of the call, and
// reports whether it did (false: nothing more may be dropped). It drops
// the share of q's size the provider's numbers say is over, and a margin
// (overShare), or else half of what may still be dropped; after
// maxTruncations refusals, everything that may be.
func (r *run) truncate(q *provider.Request, msg string, refusals int) bool {
	items := r.seen()
	points := cutPoints(items)
	from := r.cutAt(items, points)
	i, _ := slices.BinarySearch(points, from+1)
	if i == len(points) {
		return false
	}
	dropped := droppedSizes(items)
	more := points[i:]
	last := more[len(more)-1]
	need := dropped[last] - dropped[from]
	switch share := overShare(msg); {
	case refusals >= maxTruncations:
	case share > 0:
		need = int((share + truncationMargin) * float64(requestSize(q)))
	default:
		need /= 2
	}
	cut := last
	for _, p := range more {
		if dropped[p]-dropped[from] >= need {
			cut = p
			break
		}
	}
	r.cut = items[cut].ID
	return true
}

// droppedSizes is, for each p up to len(items), the size of the items a
// cut at p drops (keptItems).
func droppedSizes(items []api.Item) []int {
	u := latestInput(items)
	dropped := make([]int, len(items)+1)
	for j := range items {
		dropped[j+1] = dropped[j]
		if j != u && !keptAlways(&items[j]) {
			dropped[j+1] += size(&items[j])
		}
	}
	return dropped
}

// size is the size of v as JSON, what truncation measures items by.
func size(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// requestSize is the size of what the model call q sends: its items,
// instructions and tools.
func requestSize(q *provider.Request) int {
	n := len(q.Instructions) + size(q.Tools)
	for i := range q.Items {
		n += size(&q.Items[i])
	}
	return n
}

// The numbers of a provider's refusal for a call's size: the window, what
// the call came to (its input, or its input and the completion asked for
// as the message says), the completion's part of that, and a completion
// asked for on top of the input.
var (
	windowTokens = regexp.MustCompile(`maximum context length is (\d+)|maximum model length of (\d+)|available context size \((\d+) tokens\)|(\d+) maximum`)
	sentTokens   = regexp.MustCompile(`resulted in (\d+) tokens|requested (\d+) tokens|has (\d+) input tokens|\(length (\d+)\)|request \((\d+) tokens\)|too long: (\d+) tokens`)
	inCompletion = regexp.MustCompile(`(\d+) in the completion`)
	onTopOf      = regexp.MustCompile(`too large: (\d+)`)
)

// overShare is the share of a call's input that is over the model's
// context window by msg, the provider's refusal, when it names the window
// and the call's size: OpenAI's ("maximum context length is N tokens.
// However, your messages resulted in M tokens", "you requested M tokens
// (X in the messages, C in the completion)"), vLLM's ("your request has M
// input tokens", "The decoder prompt (length M) is longer than the
// maximum model length of N", "'max_tokens' … is too large: C"),
// llama.cpp's ("request (M tokens) exceeds the available context size (N
// tokens)") and Anthropic's ("prompt is too long: M tokens > N maximum").
// 0 when it names no numbers (Bedrock's "Input is too long for requested
// model.", OpenAI's Responses API's).
func overShare(msg string) float64 {
	window, sent := number(windowTokens, msg), number(sentTokens, msg)
	if window <= 0 || sent <= 0 {
		return 0
	}
	input := sent
	if c := number(inCompletion, msg); c < sent {
		input = sent - c
	}
	sent += number(onTopOf, msg)
	if sent <= window {
		return 0
	}
	return min(1, float64(sent-window)/float64(input))
}

// number is the number re's first match in msg captures, 0 when none.
func number(re *regexp.Regexp, msg string) int {
	for _, g := range re.FindStringSubmatch(msg) {
		if n, err := strconv.Atoi(g); err == nil {
			return n
		}
	}
	return 0
}
