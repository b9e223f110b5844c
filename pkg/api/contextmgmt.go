package api

import (
	"encoding/json"
	"fmt"
)

// The bounds of context_management's compact_threshold, in tokens
// (docs/api.md, "Server-side compaction"): below MinCompactThreshold a
// summary with the user's messages beside it would hardly be smaller than
// what it replaces; DefaultCompactThreshold applies when the entry names
// none (the gateway does not know the model's context window).
const (
	MinCompactThreshold     = 1000
	MaxCompactThreshold     = 10_000_000
	DefaultCompactThreshold = 150_000
)

// ContextCompaction is the type of the one context_management entry there
// is: server-side compaction.
const ContextCompaction = "compaction"

// ContextManagement is one entry of a create request's context_management.
type ContextManagement struct {
	Type string `json:"type"`
	// CompactThreshold is the rendered size, in tokens, past which the
	// conversation is compacted before a model call; nil: the default.
	CompactThreshold *int `json:"compact_threshold,omitempty"`
}

// CompactThreshold returns the threshold of the request's compaction
// entry (DefaultCompactThreshold when it names none); false when the
// request asks for no server-side compaction.
func (r *CreateResponseRequest) CompactThreshold() (int, bool) {
	for _, c := range r.ContextManagement {
		if c.Type == ContextCompaction {
			if c.CompactThreshold == nil {
				return DefaultCompactThreshold, true
			}
			return *c.CompactThreshold, true
		}
	}
	return 0, false
}

// decodeContextManagement decodes and checks context_management: an array
// of objects of a type and, for "compaction", a compact_threshold within
// its bounds; each type at most once.
func (r *CreateResponseRequest) decodeContextManagement(v json.RawMessage) error {
	const k = "context_management"
	if err := checkArrayLen(k, v); err != nil {
		return err
	}
	var entries []json.RawMessage
	if err := into(k, v, &entries); err != nil {
		return err
	}
	r.ContextManagement = make([]ContextManagement, 0, len(entries))
	for i, raw := range entries {
		p := fmt.Sprintf("%s[%d]", k, i)
		var c ContextManagement
		if err := object(p, raw, &c, "type", "compact_threshold"); err != nil {
			return err
		}
		if err := c.check(p, r.ContextManagement); err != nil {
			return err
		}
		r.ContextManagement = append(r.ContextManagement, c)
	}
	return nil
}

// check validates c, the entry p, given the entries before it.
func (c *ContextManagement) check(p string, before []ContextManagement) error {
	switch {
	case c.Type == "":
		return InvalidRequestCode(p+".type", "missing_required_parameter", "Missing required parameter: '%s.type'.", p)
	case c.Type != ContextCompaction:
		return oneOf(p+".type", &c.Type, ContextCompaction)
	}
	for _, b := range before {
		if b.Type == c.Type {
			return InvalidRequest(p+".type", "Invalid '%s.type': the context management type %q may be given once only.", p, c.Type)
		}
	}
	if c.CompactThreshold == nil {
		return nil
	}
	return checkRange(p+".compact_threshold", "integer", float64(*c.CompactThreshold), MinCompactThreshold, MaxCompactThreshold)
}
