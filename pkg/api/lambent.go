package api

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
	// UnservedTools lists the types of the request's built-in tools that
	// this gateway does not run (api.BuiltinKind), in request order: they
	// were left out of what the model sees.
	UnservedTools []string `json:"unserved_tools,omitempty"`
}

// AddHookErrors appends errs to r's hook errors, creating the extension
// field when needed. The field is replaced, not changed in place, so clones
// of r keep what they had.
func (r *Response) AddHookErrors(errs ...string) {
	if len(errs) == 0 {
		return
	}
	c := r.Lambent.clone()
	if c == nil {
		c = &LambentInfo{}
	}
	c.HookErrors = append(c.HookErrors, errs...)
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
			a.Errors = append([]string(nil), a.Errors...)
			c.Attempts[i] = a
		}
	}
	if l.Cancelled != nil {
		cc := *l.Cancelled
		c.Cancelled = &cc
	}
	return &c
}
