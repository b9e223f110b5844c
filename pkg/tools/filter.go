package tools

// Filter decides which tools the model may call: the seed's allowed_tools
// list semantics (every tool is sent to the model for context, calls to the
// others are refused with an error result) for both the top-level
// allowed_tools list and tool_choice {"type":"allowed_tools"}.
type Filter struct {
	allowed map[string]bool
}

// NewFilter returns a filter allowing names; none means every tool is allowed.
func NewFilter(names []string) Filter {
	if len(names) == 0 {
		return Filter{}
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return Filter{allowed: m}
}

// Allowed reports whether the model may call name.
func (f Filter) Allowed(name string) bool { return f.allowed == nil || f.allowed[name] }

// Restricted reports whether the filter limits anything.
func (f Filter) Restricted() bool { return f.allowed != nil }
