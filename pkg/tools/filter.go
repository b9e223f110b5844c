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

// Restricted returns a filter allowing names only, none when names is
// empty (names an MCP server lists are added later: Allow).
func Restricted(names []string) Filter {
	f := Filter{allowed: make(map[string]bool, len(names))}
	f.Allow(names...)
	return f
}

// Allow lets the model call names too (an unrestricted filter allows them
// already).
func (f *Filter) Allow(names ...string) {
	if f.allowed == nil {
		return
	}
	for _, n := range names {
		f.allowed[n] = true
	}
}

// Allowed reports whether the model may call name.
func (f Filter) Allowed(name string) bool { return f.allowed == nil || f.allowed[name] }

// Restricted reports whether the filter limits anything.
func (f Filter) Restricted() bool { return f.allowed != nil }
