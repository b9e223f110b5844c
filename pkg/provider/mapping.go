package provider

import (
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/limits"
)

// What the model sees (docs/architecture.md): the history keeps the call ids
// the models issued and the tool names the requests declared, but
// providers bound both, each in its own way. Rules says what one provider
// accepts; Rules.Map rewrites a request so that every id and name fits,
// deterministically (the same history maps the same way on every model
// call, so prompt caches hold), and Mapping maps the names the model
// answers with back. Ids and names that fit pass unchanged.

// Charset is the characters a provider accepts in call ids.
type Charset int

// Charsets.
const (
	// AnyChars accepts any character.
	AnyChars Charset = iota
	// WordChars accepts [A-Za-z0-9_-].
	WordChars
	// Alnum accepts [A-Za-z0-9].
	Alnum
)

// Rules is what a provider accepts of tool call ids, tool names and tool
// counts.
type Rules struct {
	// IDMax is the longest call id accepted; IDExact, when set, is the
	// only length accepted.
	IDMax   int
	IDExact int
	// IDChars is the characters accepted in call ids.
	IDChars Charset
	// NameMax is the longest tool name accepted; names are of
	// [A-Za-z0-9_-] on every provider.
	NameMax int
	// MaxTools is the most tools one call may offer (0: no limit).
	MaxTools int
}

// OpenAIRules are the rules of OpenAI's Chat Completions: call ids of at
// most 40 characters (longer ones are refused with
// string_above_max_length), function names of at most 64 of [A-Za-z0-9_-],
// at most 128 tools (more are refused with array_above_max_length).
func OpenAIRules() Rules { return Rules{IDMax: 40, IDChars: AnyChars, NameMax: 64, MaxTools: 128} }

// MistralRules are Mistral's: call ids of exactly 9 characters of
// [A-Za-z0-9].
func MistralRules() Rules { return Rules{IDMax: 9, IDExact: 9, IDChars: Alnum, NameMax: 64} }

// BedrockRules are Bedrock Converse's: toolUseId and tool names of at most
// 64 characters of [A-Za-z0-9_-]; Converse documents no most tools.
func BedrockRules() Rules { return Rules{IDMax: 64, IDChars: WordChars, NameMax: 64} }

// derivedLen is the number of base-62 characters of a derived call id after
// its "call_" prefix.
const derivedLen = 24

// DerivedCallID returns the call id of a call whose model id is unknown,
// derived from key (an item id): "call_" and 24 base-62 characters, the
// same for the same key, within OpenAI's and Bedrock's rules.
func DerivedCallID(key string) string {
	return "call_" + base62(key, derivedLen)
}

// base62 returns n base-62 characters of the SHA-256 of s.
func base62(s string, n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(s))
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(sum[i%len(sum)])%len(alphabet)]
	}
	return string(out)
}

// ValidID reports whether the provider accepts id as a call id.
func (rl Rules) ValidID(id string) bool {
	if id == "" || len(id) > rl.IDMax || rl.IDExact > 0 && len(id) != rl.IDExact {
		return false
	}
	switch rl.IDChars {
	case WordChars:
		return allOf(id, true)
	case Alnum:
		return allOf(id, false)
	}
	return true
}

// ValidName reports whether the provider accepts name as a tool name.
func (rl Rules) ValidName(name string) bool {
	return name != "" && len(name) <= rl.NameMax && allOf(name, true)
}

// allOf reports whether s holds only [A-Za-z0-9], and '_' and '-' when
// word.
func allOf(s string, word bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || word && (c == '_' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}

// mapID returns the id the provider sees for the n-th (0-based) distinct
// call with id: id itself when valid and first, else one derived from both.
func (rl Rules) mapID(id string, n int) string {
	if n == 0 && rl.ValidID(id) {
		return id
	}
	key := id
	if n > 0 {
		key += "#" + strconv.Itoa(n)
	}
	if rl.IDExact == 0 && rl.IDMax >= len("call_")+derivedLen {
		return DerivedCallID(key)
	}
	size := rl.IDExact
	if size == 0 {
		size = rl.IDMax
	}
	return base62(key, size)
}

// mapName returns the name the provider sees for name: name itself when
// valid, else its valid characters (others as '_') cut to fit, '_' and 8
// base-62 characters of its hash.
func (rl Rules) mapName(name string) string {
	if rl.ValidName(name) {
		return name
	}
	const hashLen = 8
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if keep := rl.NameMax - hashLen - 1; len(b) > keep {
		b = b[:keep]
	}
	return string(b) + "_" + base62(name, hashLen)
}

// Mapping maps what a model answers back to the request's names.
type Mapping struct {
	names map[string]string // provider's name → the request's
}

// Name returns the request's name of the tool the provider calls name.
func (m Mapping) Name(name string) string {
	if orig, ok := m.names[name]; ok {
		return orig
	}
	return name
}

// Result maps the tool names of res's calls back, in place.
func (m Mapping) Result(res *Result) {
	if res == nil || len(m.names) == 0 {
		return
	}
	for i := range res.ToolCalls {
		res.ToolCalls[i].Name = m.Name(res.ToolCalls[i].Name)
	}
}

// Stream wraps a delta callback so that tool names reach fn mapped back.
func (m Mapping) Stream(fn func(Delta) error) func(Delta) error {
	if len(m.names) == 0 {
		return fn
	}
	return func(d Delta) error {
		if d.ToolName != "" {
			d.ToolName = m.Name(d.ToolName)
		}
		return fn(d)
	}
}

// Fit returns req mapped to fit rl (Map), or, for a request rl refuses
// whatever the mapping (more tools than MaxTools: a request's tools with
// those its MCP servers list can be), a 400 limit_exceeded naming tools,
// so that the call is not made.
func (rl Rules) Fit(req *Request) (*Request, Mapping, error) {
	if n := len(req.Tools); rl.MaxTools > 0 && n > rl.MaxTools {
		return nil, Mapping{}, api.InvalidRequestCode("tools", limits.CodeLimitExceeded,
			"the model would be offered %d tools (the request's tools and the tools its MCP servers list), over this model provider's limit of %d; declare fewer tools or narrow an MCP server's allowed_tools.",
			n, rl.MaxTools)
	}
	req, m := rl.Map(req)
	return req, m, nil
}

// Map returns req with every call id and tool name valid under rl, and the
// Mapping of the names back. Call ids stay unique: a later call reusing an
// earlier call's id (models that number their calls per turn) gets a
// derived one, and each function_call_output follows its call's. req is not
// changed; the result shares what it leaves unchanged, and is req itself
// when nothing changes (callers only read it).
func (rl Rules) Map(req *Request) (*Request, Mapping) {
	var m Mapping
	name := func(n string) string {
		p := rl.mapName(n)
		if p != n {
			if m.names == nil {
				m.names = map[string]string{}
			}
			m.names[p] = n
		}
		return p
	}
	out := *req
	var tools []api.ToolDefinition
	for i := range req.Tools {
		if p := name(req.Tools[i].Name); p != req.Tools[i].Name {
			if tools == nil {
				tools = append([]api.ToolDefinition(nil), req.Tools...)
			}
			tools[i].Name = p
		}
	}
	if tools != nil {
		out.Tools = tools
	}
	if out.ForcedTool != "" {
		out.ForcedTool = name(out.ForcedTool)
	}
	var items []api.Item
	set := func(i int, it api.Item) {
		if items == nil {
			items = append([]api.Item(nil), req.Items...)
		}
		items[i] = it
	}
	used := map[string]bool{}      // provider ids given
	current := map[string]string{} // request id → provider id of its latest call
	seen := map[string]int{}       // request id → calls with it so far
	for i := range req.Items {
		it := req.Items[i]
		switch it.Type {
		case api.ItemFunctionCall:
			n := seen[it.CallID]
			p := rl.mapID(it.CallID, n)
			for used[p] {
				n++
				p = rl.mapID(it.CallID, n)
			}
			seen[it.CallID] = n + 1
			used[p] = true
			current[it.CallID] = p
			nm := name(it.Name)
			if p != it.CallID || nm != it.Name {
				it.CallID, it.Name = p, nm
				set(i, it)
			}
		case api.ItemFunctionCallOutput:
			p, ok := current[it.CallID]
			if !ok {
				p = rl.mapID(it.CallID, 0)
			}
			if p != it.CallID {
				it.CallID = p
				set(i, it)
			}
		}
	}
	if items == nil && tools == nil && out.ForcedTool == req.ForcedTool {
		return req, m
	}
	if items != nil {
		out.Items = items
	}
	return &out, m
}

// ErrorText is how a failed tool call's output reaches a model that has no
// error flag for tool results (Chat Completions; Bedrock models without
// toolResult status): the text after "Error: ", unless it already starts
// so. Every failure the gateway feeds back — a hosted tool's, an MCP tool's
// isError, a tool Lambda's is_error, a validator's or the reflection's —
// is marked here, in one place.
func ErrorText(output string) string {
	if strings.HasPrefix(output, "Error:") {
		return output
	}
	if strings.TrimSpace(output) == "" {
		return "Error: the tool call failed without a message."
	}
	return "Error: " + output
}
