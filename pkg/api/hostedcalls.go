package api

import (
	"cmp"
	"encoding/json"
	"strconv"
)

// The items of OpenAI's hosted tools that a client keeping its own history
// (Codex) replays from a thread OpenAI ran: Lambent runs none of these
// tools, but keeps the items as they came (stored, listed back) and leaves
// them out of what the model sees. The JSON values they carry as they are
// have a bounded depth (MaxItemValueDepth); their size is bounded by the
// body's (LAMBENT_MAX_BODY).

// MaxItemValueDepth bounds the nesting depth (objects and arrays inside
// each other) of a JSON value an input item carries as it is: a
// web_search_call's action, a tool_search_call's arguments, a
// tool_search_output's tools, the action (operation) of a computer, shell,
// local shell or apply_patch call, safety checks, and the output of a
// computer or shell call kept as it came, the annotations and logprobs of
// parts, an mcp_list_tools item's tool schemas and annotations, and a
// built-in tool's declaration. It bounds a client's items, not stored ones
// (checkActionDepths, checkCarriedDepths).
const MaxItemValueDepth = 64

// checkDepth checks that the JSON value v (the item's param) is nested at
// most MaxItemValueDepth levels deep.
func checkDepth(param string, v json.RawMessage) error {
	if deeperThan(v, MaxItemValueDepth) {
		return InvalidRequestCode(param, "limit_exceeded", "Invalid '%s': nested deeper than this gateway's limit of %d levels (objects and arrays inside each other).", param, MaxItemValueDepth)
	}
	return nil
}

// deeperThan reports whether the JSON value v (valid JSON, as a decoder
// hands it over) nests objects and arrays more than limit levels deep, in
// one pass that stops there.
func deeperThan(v []byte, limit int) bool {
	var str jsonStrings
	depth := 0
	for _, c := range v {
		if str.inside(c) {
			continue
		}
		switch c {
		case '[', '{':
			if depth++; depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// checkActionDepths checks the depth of the JSON values an input item of
// a client-executed call, or of its output, carries as it is: the action
// (an apply_patch_call's operation), the safety checks, the output. It is
// a bound of client input (validateInputItem), not of the item type: a
// call the model makes has its arguments as its action, and it is stored
// and read back whatever their depth.
func checkActionDepths(it *Item) error {
	action, checks := "action", "pending_safety_checks"
	switch it.Type {
	case ItemApplyPatchCall:
		action = "operation"
	case ItemComputerCallOutput:
		checks = "acknowledged_safety_checks"
	case ItemShellCall, ItemLocalShellCall, ItemComputerCall, ItemShellCallOutput:
	default:
		return nil
	}
	for _, v := range []struct {
		param string
		value json.RawMessage
	}{{action, it.Action}, {checks, it.SafetyChecks}, {"output", it.OutputRaw}} {
		if err := checkDepth(v.param, v.value); err != nil {
			return err
		}
	}
	return nil
}

// checkCarriedDepths checks the depth of the other JSON values an input
// item carries as it is: the annotations and logprobs of its parts
// (content, a tool output's parts), and the input schema and annotations
// of an mcp_list_tools item's tools. Deeper ones were stored, and a store
// that reads them back with encoding/json (10,000 levels at most) could not.
func checkCarriedDepths(it *Item) error {
	for _, parts := range []struct {
		param string
		parts []ContentPart
	}{{"content", it.Content}, {"output", it.OutputParts}} {
		for j := range parts.parts {
			p := &parts.parts[j]
			if err := checkDepths(parts.param+"["+strconv.Itoa(j)+"].annotations", p.Annotations...); err != nil {
				return err
			}
			if err := checkDepths(parts.param+"["+strconv.Itoa(j)+"].logprobs", p.Logprobs...); err != nil {
				return err
			}
		}
	}
	for j := range it.Tools {
		t := &it.Tools[j]
		p := "tools[" + strconv.Itoa(j) + "]"
		if err := cmp.Or(checkDepth(p+".input_schema", t.InputSchema), checkDepth(p+".annotations", t.Annotations)); err != nil {
			return err
		}
	}
	return nil
}

// checkDepths checks each of values (elements of the item's param) as
// checkDepth does.
func checkDepths(param string, values ...json.RawMessage) error {
	for _, v := range values {
		if err := checkDepth(param, v); err != nil {
			return err
		}
	}
	return nil
}

// jsonStrings follows the strings of a byte-by-byte pass over valid JSON.
type jsonStrings struct{ in, escaped bool }

// inside reports whether c, the pass's next byte, belongs to a string after
// its opening quote (its content or its closing quote).
func (s *jsonStrings) inside(c byte) bool {
	switch {
	case !s.in:
		s.in = c == '"'
		return false
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
	}
	return true
}

// webSearchAction is the shape of a web_search_call's action: search
// (query, queries, sources), open_page (url), find (url, pattern; Codex
// names it find_in_page). Other keys and types pass as they are.
type webSearchAction struct {
	Type    *string         `json:"type"`
	Query   *string         `json:"query"`
	Queries json.RawMessage `json:"queries"`
	Sources json.RawMessage `json:"sources"`
	URL     *string         `json:"url"`
	Pattern *string         `json:"pattern"`
}

// webSearchSource is the shape of a source of a web_search_call's action.
type webSearchSource struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// checkWebSearchAction checks a web_search_call's action: an object of a
// bounded depth with a type, whose fields have their types (queries and
// sources of a bounded number).
func checkWebSearchAction(v json.RawMessage) error {
	if v[0] != '{' {
		return InvalidRequestCode("action", "invalid_type", "Invalid type for 'action': expected an object.")
	}
	if err := checkDepth("action", v); err != nil {
		return err
	}
	var a webSearchAction
	if err := into("action", v, &a); err != nil {
		return err
	}
	// Counted before they are built (checkArrayLen), then checked for
	// their types.
	if err := cmp.Or(checkArrayLen("action.queries", a.Queries), checkArrayLen("action.sources", a.Sources)); err != nil {
		return err
	}
	var queries []string
	var sources []webSearchSource
	if err := cmp.Or(optionalInto("action.queries", a.Queries, &queries), optionalInto("action.sources", a.Sources, &sources)); err != nil {
		return err
	}
	if a.Type == nil || *a.Type == "" {
		return InvalidRequestCode("action.type", "missing_required_parameter", "Missing required parameter: 'action.type'.")
	}
	return nil
}

// checkLoadedTools checks a tool_search_output's tools: an array of tool
// definitions (objects with a type) of a bounded depth and number. Lambent offers
// none of them to the model.
func checkLoadedTools(v json.RawMessage) error {
	if len(v) == 0 || isNull(v) {
		return InvalidRequestCode("tools", "missing_required_parameter", "Missing required parameter: 'tools'.")
	}
	if err := cmp.Or(checkDepth("tools", v), checkArrayLen("tools", v)); err != nil {
		return err
	}
	var tools []struct {
		Type *string `json:"type"`
	}
	if err := into("tools", v, &tools); err != nil {
		return err
	}
	for j, t := range tools {
		if t.Type == nil || *t.Type == "" {
			p := "tools[" + strconv.Itoa(j) + "].type"
			return InvalidRequestCode(p, "missing_required_parameter", "Missing required parameter: '%s'.", p)
		}
	}
	return nil
}

// optionalInto decodes v, when present and not null, into target (param
// names it in an error).
func optionalInto(param string, v json.RawMessage, target any) error {
	if len(v) == 0 || isNull(v) {
		return nil
	}
	return into(param, v, target)
}
