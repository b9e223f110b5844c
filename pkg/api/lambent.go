package api

// LambentInfo is the response's "lambent" extension field: what Lambent
// reports beyond the OpenResponses schema. Response.Lambent is nil (and the
// field omitted) when every part is empty.
type LambentInfo struct {
	// HookErrors lists the operator's tool call hooks that failed for this
	// response (delivery errors, timeouts, events dropped on a full queue)
	// and were known when it ended; a failing hook never changes anything
	// else of the response.
	HookErrors []string `json:"hook_errors,omitempty"`
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
	return &c
}
