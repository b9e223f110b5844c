package store

import (
	"encoding/json"
	"reflect"

	"github.com/lambent/lambent/pkg/api"
)

// The sizes of the values a record holds, as sizeOf counts them (the
// type's own size): set once, never changed.
var (
	recordSize     = int64(reflect.TypeFor[Record]().Size())
	responseSize   = int64(reflect.TypeFor[api.Response]().Size())
	itemSize       = int64(reflect.TypeFor[api.Item]().Size())
	partSize       = int64(reflect.TypeFor[api.ContentPart]().Size())
	rawSize        = int64(reflect.TypeFor[json.RawMessage]().Size())
	stringSize     = int64(reflect.TypeFor[string]().Size())
	intSize        = int64(reflect.TypeFor[int]().Size())
	int64Size      = int64(reflect.TypeFor[int64]().Size())
	boolSize       = int64(reflect.TypeFor[bool]().Size())
	incompleteSize = int64(reflect.TypeFor[api.IncompleteDetails]().Size())
	errorSize      = int64(reflect.TypeFor[api.ResponseError]().Size())
	reasoningSize  = int64(reflect.TypeFor[api.Reasoning]().Size())
	usageSize      = int64(reflect.TypeFor[api.Usage]().Size())
	convRefSize    = int64(reflect.TypeFor[api.ConversationRef]().Size())
	accessSize     = int64(reflect.TypeFor[api.AccessPrograms]().Size())
	lambentSize    = int64(reflect.TypeFor[api.LambentInfo]().Size())
	attemptSize    = int64(reflect.TypeFor[api.Attempt]().Size())
	cancelSize     = int64(reflect.TypeFor[api.Cancellation]().Size())
	lUsageSize     = int64(reflect.TypeFor[api.LambentUsage]().Size())
	timingSize     = int64(reflect.TypeFor[api.Timing]().Size())
)

// recordBytes is what a stored record holds: the Record and everything it
// refers to, as sizeOf counts it. It walks the fields a response's record
// holds on every request (the response, its Lambent field, its items and
// their content parts) by name, and the rarer rest (tools, a background
// job) with sizeOf: the same count, without reflection on the
// request path. TestRecordBytesMatchesSizeOf holds it to sizeOf on records
// with every field set, so that a field added to these types and not
// counted here fails it.
func recordBytes(rec *Record) int64 {
	n := recordSize + itemsBytes(rec.Input) + itemsBytes(rec.Context) + int64(len(rec.Cut))
	if rec.Response != nil {
		n += responseBytes(rec.Response)
	}
	if rec.Job != nil {
		n += sizeOf(reflect.ValueOf(rec.Job).Elem())
	}
	return n
}

// responseBytes is sizeOf of *r.
func responseBytes(r *api.Response) int64 {
	n := responseSize +
		int64(len(r.ID)+len(r.Object)+len(r.Status)+len(r.Model)+len(r.Truncation)+len(r.ServiceTier)) +
		int64(len(r.ToolChoice.Type)+len(r.ToolChoice.Mode)+len(r.ToolChoice.Name)+len(r.ToolChoice.Namespace)+len(r.ToolChoice.ServerLabel)) +
		int64(len(r.Text.Format.Type)+len(r.Text.Format.Name)+len(r.Text.Verbosity)) +
		stringPtrBytes(r.PreviousResponseID) + stringPtrBytes(r.Instructions) +
		stringPtrBytes(r.SafetyIdentifier) + stringPtrBytes(r.PromptCacheKey) +
		stringPtrBytes(r.Text.Format.Description) + int64(cap(r.Text.Format.Schema)) +
		itemsBytes(r.Output)
	if r.CompletedAt != nil {
		n += int64Size
	}
	if r.MaxOutputTokens != nil {
		n += intSize
	}
	if r.MaxToolCalls != nil {
		n += intSize
	}
	if r.Text.Format.Strict != nil {
		n += boolSize
	}
	if d := r.IncompleteDetails; d != nil {
		n += incompleteSize + int64(len(d.Reason))
	}
	if e := r.Error; e != nil {
		n += errorSize + int64(len(e.Code)+len(e.Message))
	}
	if re := r.Reasoning; re != nil {
		n += reasoningSize + stringPtrBytes(re.Effort) + stringPtrBytes(re.Summary)
	}
	if r.Usage != nil {
		n += usageSize
	}
	if c := r.Conversation; c != nil {
		n += convRefSize + int64(len(c.ID))
	}
	if a := r.AccessPrograms; a != nil {
		n += accessSize + int64(len(a.Cyber))
	}
	for k, v := range r.Metadata {
		n += 2*stringSize + int64(len(k)+len(v))
	}
	if cap(r.Tools) > 0 {
		n += refBytes(reflect.ValueOf(r.Tools))
	}
	if cap(r.ToolChoice.Tools) > 0 {
		n += refBytes(reflect.ValueOf(r.ToolChoice.Tools))
	}
	if r.Lambent != nil {
		n += lambentBytes(r.Lambent)
	}
	return n
}

// lambentBytes is sizeOf of *l (every terminal response has one, with its
// timing).
func lambentBytes(l *api.LambentInfo) int64 {
	n := lambentSize + stringsBytes(l.HookErrors) + stringsBytes(l.UnservedTools)
	if c := l.Cancelled; c != nil {
		n += cancelSize + int64(len(c.Phase))
	}
	if l.Usage != nil {
		n += lUsageSize
	}
	if l.Timing != nil {
		n += timingSize
	}
	if cap(l.Attempts) > 0 {
		n += int64(cap(l.Attempts)) * attemptSize
		for i := range l.Attempts {
			a := &l.Attempts[i]
			n += int64(len(a.Code)) + stringsBytes(a.Errors)
		}
	}
	return n
}

// stringsBytes is refBytes of s.
func stringsBytes(s []string) int64 {
	n := int64(cap(s)) * stringSize
	for _, e := range s {
		n += int64(len(e))
	}
	return n
}

// itemsBytes is refBytes of items: their backing array and what the items
// refer to.
func itemsBytes(items []api.Item) int64 {
	if cap(items) == 0 {
		return 0
	}
	n := int64(cap(items)) * itemSize
	for i := range items {
		n += itemRefBytes(&items[i])
	}
	return n
}

// itemRefBytes is refBytes of *it.
func itemRefBytes(it *api.Item) int64 {
	n := int64(len(it.Type)+len(it.ID)+len(it.Status)+len(it.Role)+len(it.Phase)+
		len(it.CallID)+len(it.Name)+len(it.Namespace)+len(it.Arguments)+len(it.Input)+len(it.Execution)+
		len(it.Output)+len(it.EncryptedContent)+len(it.ServerLabel)+len(it.Error)+
		len(it.ApprovalRequestID)+len(it.Reason)+len(it.Hidden.ModelCallID)+len(it.Hidden.Encrypted)) +
		int64(cap(it.Action)+cap(it.OutputRaw)+cap(it.SafetyChecks)) +
		partsBytes(it.Content) + partsBytes(it.OutputParts) + partsBytes(it.Summary)
	if cap(it.Tools) > 0 {
		n += refBytes(reflect.ValueOf(it.Tools))
	}
	return n
}

// partsBytes is refBytes of parts.
func partsBytes(parts []api.ContentPart) int64 {
	if cap(parts) == 0 {
		return 0
	}
	n := int64(cap(parts)) * partSize
	for i := range parts {
		p := &parts[i]
		n += int64(len(p.Type)+len(p.Text)+len(p.Refusal)+len(p.ImageURL)+len(p.Detail)+
			len(p.FileID)+len(p.FileData)+len(p.FileURL)+len(p.Filename)) +
			rawsBytes(p.Annotations) + rawsBytes(p.Logprobs)
	}
	return n
}

// rawsBytes is refBytes of raws.
func rawsBytes(raws []json.RawMessage) int64 {
	if cap(raws) == 0 {
		return 0
	}
	n := int64(cap(raws)) * rawSize
	for _, r := range raws {
		n += int64(cap(r))
	}
	return n
}

// stringPtrBytes is refBytes of p.
func stringPtrBytes(p *string) int64 {
	if p == nil {
		return 0
	}
	return stringSize + int64(len(*p))
}
