package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lambent/lambent/pkg/tooldef"
)

// MCP transports.
const (
	// MCPStreamableHTTP is the streamable HTTP transport (the default).
	MCPStreamableHTTP = "streamable_http"
	// MCPSSE is the older HTTP+SSE transport.
	MCPSSE = "sse"
	// MCPStdio runs the server as a child process (local runs only).
	MCPStdio = "stdio"
)

// Approval settings of require_approval.
const (
	MCPApproveAlways = "always"
	MCPApproveNever  = "never"
)

// MCPServer is an MCP server a request uses: declared in the request
// ({"type":"mcp",...}) or configured in the manifest and enabled with
// {"type":"lambent:<name>"}.
type MCPServer struct {
	// Label is the server_label its items carry.
	Label string
	// Description is the server_description (shown to nobody but echoed).
	Description string
	// URL is the endpoint of the HTTP transports.
	URL string
	// Transport is MCPStreamableHTTP (default), MCPSSE or MCPStdio.
	Transport string
	// Command is the program and arguments of a stdio server.
	Command []string
	// Headers are sent with every HTTP request; their values are secrets.
	Headers map[string]string
	// Authorization is an access token sent as "Authorization: Bearer"; a
	// secret.
	Authorization string
	// Trusted marks an operator-configured (manifest) server: its URL is
	// not held to the SSRF guard and may use http.
	Trusted bool
	// Allowed selects the server's tools the model sees.
	Allowed MCPToolFilter
	// Approval says which calls wait for the client's approval.
	Approval MCPApproval
}

// MCPBounds bound what one session takes from its server (the engine's
// limits.Limits); a zero field means that limit's default.
type MCPBounds struct {
	// Tools is the most tools a listing may offer; a longer listing fails
	// (limits.Limits.MCPToolsPerServer).
	Tools int
	// ReplyBytes is the most bytes of one reply of the server (a listing,
	// all its pages together, or a call's result); a larger one fails that
	// listing or call (limits.Limits.MCPReplyBytes).
	ReplyBytes int64
}

// MCPConnector opens sessions with MCP servers (package tools/mcp).
type MCPConnector interface {
	// Check validates srv before anything connects (transport available,
	// URL scheme and address allowed); its error is the client's.
	Check(srv *MCPServer) error
	// Open returns a session with srv, bounded by b. It connects lazily,
	// on first use, and is safe for concurrent use.
	Open(srv *MCPServer, b MCPBounds) MCPSession
}

// RedactedQuery stands for the query of an MCP server URL wherever the URL
// is shown (responses, stored records, errors, logs): the query may hold a
// key.
const RedactedQuery = "REDACTED"

// RedactMCPURL is the MCP server URL raw as it is shown: its query
// replaced by RedactedQuery, its fragment dropped. A URL with neither is
// returned as is.
func RedactMCPURL(raw string) string {
	i := strings.IndexAny(raw, "?#")
	switch {
	case i < 0:
		return raw
	case raw[i] == '?':
		return raw[:i+1] + RedactedQuery
	}
	return raw[:i]
}

// MCPSession is one connection to an MCP server, used by one response.
type MCPSession interface {
	// ListTools lists the server's tools.
	ListTools(ctx context.Context) ([]tooldef.MCPTool, error)
	// CallTool calls the tool name with arguments (a JSON object). A tool
	// that reports an error (isError) is an is_error result; a server that
	// cannot be reached or answers nonsense is an error.
	CallTool(ctx context.Context, name, arguments string) (*ToolResult, error)
	// Close ends the session.
	Close() error
}

// MCPToolFilter selects tools by name and by read-only annotation. The zero
// value selects nothing; Set false (allowed_tools absent) selects every
// tool where a filter means "allowed".
type MCPToolFilter struct {
	// Set is true when the filter was given.
	Set bool
	// Names lists the selected tool names (none: any name).
	Names []string
	// ReadOnly selects only tools annotated readOnlyHint.
	ReadOnly bool
}

// Match reports whether the filter selects t: a filter that was given and
// has criteria selects tools meeting all of them.
func (f MCPToolFilter) Match(t *tooldef.MCPTool) bool {
	if !f.Set || (len(f.Names) == 0 && !f.ReadOnly) {
		return false
	}
	if len(f.Names) > 0 && !slices.Contains(f.Names, t.Name) {
		return false
	}
	return !f.ReadOnly || readOnly(t)
}

// Allows reports whether, as allowed_tools, the filter lets the model see
// t: an absent filter or one without criteria allows everything.
func (f MCPToolFilter) Allows(t *tooldef.MCPTool) bool {
	if !f.Set || (len(f.Names) == 0 && !f.ReadOnly) {
		return true
	}
	return f.Match(t)
}

func readOnly(t *tooldef.MCPTool) bool {
	var a struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	}
	return len(t.Annotations) > 0 && json.Unmarshal(t.Annotations, &a) == nil && a.ReadOnlyHint
}

// MCPApproval is require_approval: a setting for every tool, or filters of
// the tools that always and never need approval (a tool both name needs it;
// a tool neither names needs it too).
type MCPApproval struct {
	// Mode is MCPApproveAlways or MCPApproveNever for the string form, ""
	// for the filter form.
	Mode          string
	Always, Never MCPToolFilter
}

// Required reports whether a call to t waits for approval.
func (a MCPApproval) Required(t *tooldef.MCPTool) bool {
	switch a.Mode {
	case MCPApproveNever:
		return false
	case MCPApproveAlways:
		return true
	}
	if a.Always.Match(t) {
		return true
	}
	return !a.Never.Match(t)
}

// wireFilter is the object form of allowed_tools and of require_approval's
// filters.
type wireFilter struct {
	ToolNames []string `json:"tool_names,omitempty"`
	ReadOnly  *bool    `json:"read_only,omitempty"`
}

func (w wireFilter) filter() MCPToolFilter {
	return MCPToolFilter{Set: true, Names: w.ToolNames, ReadOnly: w.ReadOnly != nil && *w.ReadOnly}
}

func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// ParseMCPAllowedTools reads allowed_tools: absent, a list of tool names,
// or {"tool_names":[…],"read_only":bool}.
func ParseMCPAllowedTools(raw json.RawMessage) (MCPToolFilter, error) {
	if absent(raw) {
		return MCPToolFilter{}, nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err == nil {
		return MCPToolFilter{Set: true, Names: names}, nil
	}
	var w wireFilter
	if err := strictUnmarshal(raw, &w); err != nil {
		return MCPToolFilter{}, errors.New(`expected a list of tool names or {"tool_names": [...], "read_only": bool}`)
	}
	return w.filter(), nil
}

// ParseMCPApproval reads require_approval: absent (always, as OpenAI),
// "always", "never", or {"always": filter, "never": filter}.
func ParseMCPApproval(raw json.RawMessage) (MCPApproval, error) {
	if absent(raw) {
		return MCPApproval{Mode: MCPApproveAlways}, nil
	}
	var mode string
	if err := json.Unmarshal(raw, &mode); err == nil {
		if mode != MCPApproveAlways && mode != MCPApproveNever {
			return MCPApproval{}, fmt.Errorf("invalid value %q; expected \"always\", \"never\" or an object", mode)
		}
		return MCPApproval{Mode: mode}, nil
	}
	var w struct {
		Always *wireFilter `json:"always"`
		Never  *wireFilter `json:"never"`
	}
	if err := strictUnmarshal(raw, &w); err != nil {
		return MCPApproval{}, errors.New(`expected "always", "never" or {"always": {"tool_names": [...]}, "never": {"tool_names": [...]}}`)
	}
	var a MCPApproval
	if w.Always != nil {
		a.Always = w.Always.filter()
	}
	if w.Never != nil {
		a.Never = w.Never.filter()
	}
	return a, nil
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Wire is the filter in allowed_tools' form: a list of names, or the
// object form when it selects read-only tools; nil when not given.
func (f MCPToolFilter) Wire() json.RawMessage {
	if !f.Set {
		return nil
	}
	var v any = f.Names
	if f.ReadOnly {
		v = wireFilter{ToolNames: f.Names, ReadOnly: &f.ReadOnly}
	} else if f.Names == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return b
}

// Wire is the setting in require_approval's form.
func (a MCPApproval) Wire() json.RawMessage {
	if a.Mode != "" {
		b, _ := json.Marshal(a.Mode)
		return b
	}
	w := struct {
		Always *wireFilter `json:"always,omitempty"`
		Never  *wireFilter `json:"never,omitempty"`
	}{}
	for _, p := range []struct {
		f   MCPToolFilter
		dst **wireFilter
	}{{a.Always, &w.Always}, {a.Never, &w.Never}} {
		if p.f.Set {
			wf := wireFilter{ToolNames: p.f.Names}
			if p.f.ReadOnly {
				wf.ReadOnly = &p.f.ReadOnly
			}
			*p.dst = &wf
		}
	}
	b, _ := json.Marshal(w)
	return b
}
