package api

import (
	"slices"
	"time"
)

// LambentInfo is the response's "lambent" extension field: what Lambent
// reports beyond the OpenResponses schema. Response.Lambent is nil (and the
// field omitted) when every part is empty.
type LambentInfo struct {
	// Attempts lists the attempts of a validated output so far; while the
	// response runs, the last one is the current attempt (neither valid nor
	// with errors yet).
	Attempts []Attempt `json:"attempts,omitempty"`
	// Cancelled says where a cancelled validated-output response stopped.
	Cancelled *Cancellation `json:"cancelled,omitempty"`
	// HookErrors lists the operator's tool call hooks that failed for this
	// response (delivery errors, timeouts, events dropped on a full queue)
	// and were known when it ended; a failing hook never changes anything
	// else of the response.
	HookErrors []string `json:"hook_errors,omitempty"`
	// Usage is usage OpenAI's usage object has no field for, summed over
	// the response's model calls like usage.
	Usage *LambentUsage `json:"usage,omitempty"`
	// Timing is how long the response took, on every terminal response
	// (completed, requires_action, incomplete, failed, cancelled).
	Timing *Timing `json:"timing,omitempty"`
	// UnservedTools lists the types of the request's built-in tools that
	// this gateway does not run (api.BuiltinKind), in request order: they
	// were left out of what the model sees.
	UnservedTools []string `json:"unserved_tools,omitempty"`
}

// Timing is the "lambent.timing" field: when the gateway started and ended
// working on a response, and where the time went. A background response
// counts from when a worker first ran it (created_at is when it was
// queued) and sums its invocations' model and tool time. completed_at
// stays as OpenAI sets it.
type Timing struct {
	// StartedAt is when the response's loop started; EndedAt when it
	// reached its terminal state (RFC 3339, UTC, millisecond precision).
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// DurationMS is EndedAt - StartedAt in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// ModelMS is the time spent in model calls, ToolMS the time spent
	// running server-executed tool calls (a turn's concurrent calls count
	// once, validators included), in milliseconds.
	ModelMS int64 `json:"model_ms"`
	ToolMS  int64 `json:"tool_ms"`
}

// SetTiming sets r's timing, creating the extension field when needed;
// like AddHookErrors it replaces the field, so clones keep what they had.
func (r *Response) SetTiming(t Timing) {
	r.editLambent(func(c *LambentInfo) { c.Timing = &t })
}

// LambentUsage is the "lambent.usage" of a response.
type LambentUsage struct {
	// CacheWriteInputTokens are the input tokens written to the model
	// provider's prompt cache (Bedrock's cacheWriteInputTokens), billed at
	// the provider's cache write price. usage.input_tokens includes them,
	// as it includes the cache reads of
	// usage.input_tokens_details.cached_tokens.
	CacheWriteInputTokens int `json:"cache_write_input_tokens"`
}

// AddCacheWrites adds n cache write tokens to r's lambent.usage, creating
// the field when needed (replaced, not changed in place, as
// AddHookErrors).
func (r *Response) AddCacheWrites(n int) {
	if n == 0 {
		return
	}
	r.editLambent(func(c *LambentInfo) {
		if c.Usage == nil {
			c.Usage = &LambentUsage{}
		}
		c.Usage.CacheWriteInputTokens += n
	})
}

// AddHookErrors appends errs to r's hook errors, creating the extension
// field when needed. The field is replaced, not changed in place, so clones
// of r keep what they had.
func (r *Response) AddHookErrors(errs ...string) {
	if len(errs) == 0 {
		return
	}
	r.editLambent(func(c *LambentInfo) { c.HookErrors = append(c.HookErrors, errs...) })
}

// editLambent changes a copy of r's extension field with edit (a new one
// when r has none) and sets it: the field is replaced, never changed in
// place, so clones of r keep what they had.
func (r *Response) editLambent(edit func(*LambentInfo)) {
	c := r.Lambent.clone()
	if c == nil {
		c = &LambentInfo{}
	}
	edit(c)
	r.Lambent = c
}

// clone returns a deep copy of l.
func (l *LambentInfo) clone() *LambentInfo {
	if l == nil {
		return nil
	}
	c := *l
	c.HookErrors = append([]string(nil), l.HookErrors...)
	c.UnservedTools = append([]string(nil), l.UnservedTools...)
	if l.Attempts != nil {
		c.Attempts = make([]Attempt, len(l.Attempts))
		for i, a := range l.Attempts {
			// An empty list stays one: the wire shows "errors": [].
			a.Errors = slices.Clone(a.Errors)
			c.Attempts[i] = a
		}
	}
	if l.Cancelled != nil {
		cc := *l.Cancelled
		c.Cancelled = &cc
	}
	if l.Usage != nil {
		u := *l.Usage
		c.Usage = &u
	}
	if l.Timing != nil {
		t := *l.Timing
		c.Timing = &t
	}
	return &c
}
