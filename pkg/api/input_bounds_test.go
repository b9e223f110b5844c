package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/allocs"
)

func TestArrayLen(t *testing.T) {
	for in, want := range map[string]int{
		`[]`: 0, `[ ]`: 0, `[1]`: 1, `[1,2]`: 2, `["a,b",{"c":[1,2]}]`: 2, `[ "x\",y" , 3 ]`: 2, "[\n]": 0, `[[],[]]`: 2, `[{}]`: 1,
	} {
		if got := arrayLen([]byte(in)); got != want {
			t.Errorf("arrayLen(%s) = %d, want %d", in, got, want)
		}
	}
}

// A request's input holds at most MaxInputItems items, counted before any
// is built (an 8 MB body of minimal items took ~900 MB to decode); user,
// forwarded to the provider, at most 128 bytes.
func TestInputItemsAndUserBounded(t *testing.T) {
	item := `{"role":"user","content":"a"}`
	body := `{"input":[` + strings.Repeat(item+",", MaxInputItems) + item + `]}`
	_, err := DecodeCreateRequest([]byte(body))
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != "input" {
		t.Fatalf("%d input items: %v, want a 400 limit_exceeded of input", MaxInputItems+1, err)
	}
	body = `{"input":[` + strings.Repeat(item+",", MaxInputItems-1) + item + `]}`
	if _, err := DecodeCreateRequest([]byte(body)); err != nil {
		t.Fatalf("%d input items: %v", MaxInputItems, err)
	}
	_, err = DecodeCreateRequest([]byte(`{"input":"hi","user":"` + strings.Repeat("u", 129) + `"}`))
	if !errors.As(err, &ae) || ae.Param != "user" {
		t.Fatalf("a 129-byte user: %v, want a 400 of user", err)
	}
}

// An mcp_call replayed in input keeps its id: the call id the model sees
// derives from it, so without one the same history would reach the model
// differently on every request (a prompt cache broken from there).
func TestInputMCPCallNeedsItsID(t *testing.T) {
	_, err := DecodeCreateRequest([]byte(`{"input":[{"type":"message","role":"user","content":"go"},
		{"type":"mcp_call","server_label":"docs","name":"search","arguments":"{}","output":"found","status":"completed"}]}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != "input[1].id" {
		t.Fatalf("an mcp_call without id: %v, want a 400 of input[1].id", err)
	}
}

// An mcp_call added to a conversation may come without id (the Agents
// SDK's OpenAIConversationsSession strips every item's id but a
// reasoning item's): the conversation gives it one when it stores it, and
// the call id the model sees derives from that id from then on.
func TestConversationMCPCallWithoutID(t *testing.T) {
	item := `{"type":"mcp_call","server_label":"docs","name":"search","arguments":"{}","status":"completed"}`
	if _, err := DecodeConversationItems([]byte(`{"items":[` + item + `]}`)); err != nil {
		t.Fatalf("items create: %v", err)
	}
	if _, err := DecodeConversationCreate([]byte(`{"items":[` + item + `]}`)); err != nil {
		t.Fatalf("conversation create: %v", err)
	}
}

// A request's tools are counted before any is decoded, the tools of
// namespace tools included: a declaration takes ~300 bytes however short
// its JSON, so an 8 MiB body of {} tools (given flat, in a namespace, or
// in a tool nested in one) took over 3 GB to decode before
// LAMBENT_LIMIT_TOOLS refused it (or, nested, accepted it).
func TestToolsCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	fill := func(prefix, suffix string) string {
		return prefix + strings.Repeat(`{},`, (size-len(prefix)-len(suffix))/3) + `{}` + suffix
	}
	for name, body := range map[string]string{
		"flat":      fill(`{"input":"hi","tools":[`, `]}`),
		"namespace": fill(`{"input":"hi","tools":[{"type":"namespace","name":"n","tools":[`, `]}]}`),
		"nested":    fill(`{"input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f","tools":[`, `]}]}]}`),
		"then bad":  fill(`{"input":"hi","tools":[{"type":"namespace","name":"n","tools":[`, `]},"x"]}`),
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			alloc := allocs.Bytes(func() { _, err = DecodeCreateRequest([]byte(body)) })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || !(ae.Code == "limit_exceeded" && ae.Param == "tools" || ae.Param == "tools[0].tools[0].tools") {
				t.Errorf("%d MiB of {} tools: %v, want a 400 limit_exceeded of tools (or of the nested tools)", size>>20, err)
			}
			// The body, its copy as a parameter and a copy of each level.
			if alloc > 8*size {
				t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
			}
		})
	}
	tools := strings.Repeat(`{"type":"web_search"},`, MaxTools-2) + `{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}`
	if _, err := DecodeCreateRequest([]byte(`{"input":"hi","tools":[` + tools + `]}`)); err != nil {
		t.Fatalf("%d tools: %v", MaxTools, err)
	}
}

// A tool held by another (a namespace's) holds no tools of its own:
// decoding each level of such nesting read every level under it again, so
// 40,000 levels (a 1.6 MB body) took two minutes and were accepted.
func TestNestedToolsRefused(t *testing.T) {
	const depth = 40000
	body := `{"input":"hi","tools":[` + strings.Repeat(`{"type":"function","name":"f","tools":[`, depth) + strings.Repeat(`]}`, depth) + `]}`
	var err error
	alloc := allocs.Bytes(func() { _, err = DecodeCreateRequest([]byte(body)) })
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != "tools[0].tools[0].tools" {
		t.Errorf("tools nested %d deep: %v, want a 400 of tools[0].tools[0].tools", depth, err)
	}
	// Each level read again took a copy of the levels under it.
	if alloc > 8*uint64(len(body)) {
		t.Errorf("decoding allocated %d MB for a body of %d KB", alloc>>20, len(body)>>10)
	}
}

// The items of a conversation call (POST /v1/conversations, POST
// /v1/conversations/{id}/items) are counted before any is decoded, as a
// response's input is: every one took an item's ~500 bytes before the
// first was checked, so an 8 MiB body of {} items took 1.5 GB to refuse.
func TestConversationItemsCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	items := `[` + strings.Repeat(`{},`, size/3) + `{}]`
	for name, decode := range map[string]func([]byte) error{
		"create": func(b []byte) error { _, err := DecodeConversationCreate(b); return err },
		"add":    func(b []byte) error { _, err := DecodeConversationItems(b); return err },
	} {
		t.Run(name, func(t *testing.T) {
			body := []byte(`{"items":` + items + `}`)
			var err error
			alloc := allocs.Bytes(func() { err = decode(body) })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != "items" {
				t.Errorf("%d MiB of {} items: %v, want a 400 limit_exceeded of items", size>>20, err)
			}
			if alloc > 4*size {
				t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
			}
		})
	}
}

// The arrays an input item holds (a message's content, a tool output's
// parts, an mcp_list_tools item's tools) are counted before any element is
// decoded: a null part or a {} tool was made (~200 and ~80 bytes) with all
// the others, and the item decoded up to three times, before the first was
// found wrong, so 8 MiB of them took 1.4 to 2.5 GB to refuse.
func TestItemArraysCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	for _, c := range []struct{ prefix, elem, param string }{
		{`{"role":"user","content":[`, `null`, "input[0].content"},
		{`{"type":"function_call_output","call_id":"c","output":[`, `null`, "input[0].output"},
		{`{"type":"mcp_list_tools","server_label":"s","tools":[`, `{}`, "input[0].tools"},
		{`{"type":"reasoning","summary":[`, `{"type":"summary_text","text":""}`, "input[0].summary"},
		{`{"type":"tool_search_output","id":"tso_1","call_id":"c","status":"completed","tools":[`, `{}`, "input[0].tools"},
	} {
		t.Run(c.param, func(t *testing.T) {
			body := []byte(`{"input":[` + c.prefix + strings.Repeat(c.elem+",", size/(len(c.elem)+1)) + c.elem + `]}]}`)
			var err error
			alloc := allocs.Bytes(func() { _, err = DecodeCreateRequest(body) })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != c.param {
				t.Errorf("%d MiB of %s: %v, want a 400 limit_exceeded of %s", size>>20, c.elem, err, c.param)
			}
			if alloc > 8*size {
				t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
			}
		})
	}
}

// tool_choice's allowed tools are counted before any is decoded: each
// names a tool of tools, so there are no more of them than tools may
// hold; 8 MiB of {} references took ~500 MB to refuse.
func TestAllowedToolsCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	body := []byte(`{"input":"hi","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[` + strings.Repeat(`{},`, size/3) + `{}]}}`)
	var err error
	alloc := allocs.Bytes(func() { _, err = DecodeCreateRequest(body) })
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != "tool_choice.tools" {
		t.Errorf("%d MiB of allowed tools: %v, want a 400 limit_exceeded of tool_choice.tools", size>>20, err)
	}
	if alloc > 8*size {
		t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
	}
}

// A web_search_call's queries and sources are counted before they are
// checked for their types: 8 MB of them took 176 and 336 MB in an input
// item (measured on the action, which the item's levels copy as it is).
func TestWebSearchActionCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	for _, c := range []struct{ key, elem string }{{"queries", `""`}, {"sources", `{}`}} {
		t.Run(c.key, func(t *testing.T) {
			action := []byte(`{"type":"search","` + c.key + `":[` + strings.Repeat(c.elem+",", size/(len(c.elem)+1)) + c.elem + `]}`)
			var err error
			alloc := allocs.Bytes(func() { err = checkWebSearchAction(action) })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != "action."+c.key {
				t.Errorf("8 MiB of %s: %v, want a 400 limit_exceeded of action.%s", c.key, err, c.key)
			}
			if alloc > 4*size {
				t.Errorf("checking allocated %d MB for an action of %d MB", alloc>>20, size>>20)
			}
		})
	}
	item := `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","queries":[` + strings.Repeat(`"q",`, MaxInputItems) + `"q"]}}`
	_, err := DecodeCreateRequest([]byte(`{"input":[` + item + `]}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Param != "input[0].action.queries" {
		t.Errorf("%d queries: %v, want a 400 of input[0].action.queries", MaxInputItems+1, err)
	}
	if err := checkWebSearchAction([]byte(`{"type":"search","query":"q","queries":["q"],"sources":[{"type":"url","url":"https://example.com"}]}`)); err != nil {
		t.Errorf("a search action: %v", err)
	}
	if err := checkWebSearchAction([]byte(`{"type":"search","queries":[1]}`)); err == nil {
		t.Errorf("queries of a number: accepted")
	}
}

// A content part's annotations and logprobs are counted before they are
// decoded: 8 MB of them took 260 MB to decode in an input message (each
// level of the item copies the 8 MB as it is: measured on the part, where
// that is once), and a part held any number.
func TestPartArraysCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	for _, k := range []string{"annotations", "logprobs"} {
		t.Run(k, func(t *testing.T) {
			body := []byte(`{"type":"output_text","text":"","` + k + `":[` + strings.Repeat("1,", size/2) + `1]}`)
			var err error
			alloc := allocs.Bytes(func() {
				var p ContentPart
				err = unmarshal(body, &p)
			})
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != k {
				t.Errorf("8 MiB of %s: %v, want a 400 limit_exceeded of %s", k, err, k)
			}
			if alloc > 4*size {
				t.Errorf("decoding allocated %d MB for a part of %d MB", alloc>>20, size>>20)
			}
		})
	}
	var p ContentPart
	if err := unmarshal([]byte(`{"type":"output_text","text":"a","annotations":[{"type":"url_citation"}],"logprobs":[]}`), &p); err != nil || len(p.Annotations) != 1 || p.Logprobs == nil {
		t.Fatalf("a part with annotations and logprobs: %v, %+v", err, p)
	}
}

// A request's other arrays, and its objects of strings, are counted before
// they are decoded too: 8 MB of include values, allowed_tools names,
// context_management entries or metadata pairs took 176 to 372 MB to
// refuse for their first element (or for holding over 16 pairs), and 8 MB
// of client_metadata, MCP headers or validators 99 to 176 MB.
func TestParamArraysCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	elems := func(e string) string { return strings.Repeat(e+",", size/(len(e)+1)) + e }
	var pairs strings.Builder
	for i := 0; pairs.Len() < size; i++ {
		fmt.Fprintf(&pairs, `"%x":"",`, i)
	}
	metadata := `{` + strings.TrimSuffix(pairs.String(), ",") + `}`
	for _, c := range []struct {
		name, param, code string
		decode            func() error
	}{
		{"include", "include", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","include":[` + elems(`""`) + `]}`))
			return err
		}},
		{"allowed_tools", "allowed_tools", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","allowed_tools":[` + elems(`""`) + `]}`))
			return err
		}},
		{"context_management", "context_management", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","context_management":[` + elems("1") + `]}`))
			return err
		}},
		{"client_metadata", "client_metadata", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","client_metadata":` + metadata + `}`))
			return err
		}},
		{"mcp headers", "tools[0].headers", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","tools":[{"type":"mcp","server_label":"a","server_url":"https://mcp.invalid","headers":` + metadata + `}]}`))
			return err
		}},
		{"validators", "tools[0].validators", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","tools":[{"type":"lambent:output","name":"o","parameters":{},"validators":[` + elems(`""`) + `]}]}`))
			return err
		}},
		{"metadata", "metadata", "object_above_max_properties", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","metadata":` + metadata + `}`))
			return err
		}},
		{"conversation metadata", "metadata", "object_above_max_properties", func() error {
			_, err := DecodeConversationCreate([]byte(`{"metadata":` + metadata + `}`))
			return err
		}},
		{"conversation metadata update", "metadata", "object_above_max_properties", func() error {
			_, err := DecodeMetadataUpdate([]byte(`{"metadata":` + metadata + `}`))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			alloc := allocs.Bytes(func() { err = c.decode() })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != c.code || ae.Param != c.param {
				t.Errorf("8 MiB of %s: %v, want a 400 %s of %s", c.name, err, c.code, c.param)
			}
			if alloc > 8*size {
				t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
			}
		})
	}
	// Under the count, each is checked as before: a key given 17 times is
	// one pair.
	body := `{"input":"x","include":["reasoning.encrypted_content"],"metadata":{` + strings.Repeat(`"k":"v",`, 17) + `"l":"v"}}`
	if _, err := DecodeCreateRequest([]byte(body)); err != nil {
		t.Fatal(err)
	}
}

// The members of a body and of the objects of fixed keys it holds are
// counted before they are decoded: 8 MB of unknown keys took 124 MB (186
// MB for a conversation) to refuse for the first, and an input item of
// them 127 MB (read again as an item reference without its type).
func TestObjectMembersCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	var pairs strings.Builder
	for i := 0; pairs.Len() < size; i++ {
		fmt.Fprintf(&pairs, `"%x":1,`, i)
	}
	members := strings.TrimSuffix(pairs.String(), ",")
	for _, c := range []struct {
		name, param, code string
		decode            func() error
	}{
		{"create body", "", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x",` + members + `}`))
			return err
		}},
		{"reasoning", "reasoning", "limit_exceeded", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","reasoning":{` + members + `}}`))
			return err
		}},
		{"conversation body", "", "limit_exceeded", func() error {
			_, err := DecodeConversationCreate([]byte(`{` + members + `}`))
			return err
		}},
		{"input item", "input[0].content", "", func() error {
			_, err := DecodeCreateRequest([]byte(`{"input":[{` + members + `}]}`))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			alloc := allocs.Bytes(func() { err = c.decode() })
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != 400 || c.code != "" && ae.Code != c.code || ae.Param != c.param {
				t.Errorf("8 MiB of members: %v, want a 400 %s of %q", err, c.code, c.param)
			}
			if alloc > 8*size {
				t.Errorf("decoding allocated %d MB for a body of %d MB", alloc>>20, size>>20)
			}
		})
	}
	// A key given twice is still one.
	if _, err := DecodeCreateRequest([]byte(`{"input":"x","reasoning":{"effort":"low","effort":"high"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeCreateRequest([]byte(`{"input":[{"id":"msg_1"}],"previous_response_id":"resp_1"}`)); err != nil {
		t.Fatalf("an item reference without its type: %v", err)
	}
}

// A large value nested in items and content parts is copied about once per
// level where it is decoded as a raw value (the input, an item's content
// or output) and once as the string it is, whatever the level. A body the
// decoders refuse was decoded again at every level, each by wirejson and
// then encoding/json (for the error's text), and each array's elements
// once together and again one by one (to name the one refused): an 8 MB
// string refused at its third level took 14 times the body (5 at its
// second). Now a nested decoder's error is not decoded again, and the
// elements decoded one by one alias the body: a refused body costs at
// most 7.5 times itself (its arrays are still decoded whole first, which
// keeps a valid body at one pass).
func TestNestedDecodeCopiesBounded(t *testing.T) {
	big := strings.Repeat("a", 8<<20)
	for _, c := range []struct{ name, body, param string }{
		{"input string", `{"input":"` + big + `"}`, ""},
		{"function call output", `{"input":[{"type":"function_call_output","call_id":"c","output":"` + big + `"}]}`, ""},
		{"input text part", `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"` + big + `"}]}]}`, ""},
		{"output part", `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"` + big + `"}]}]}`, ""},
		{"refused beside the input string", `{"input":"` + big + `","temperature":"x"}`, "temperature"},
		{"refused beside an output", `{"input":[{"type":"function_call_output","call_id":"c","output":"` + big + `","is_error":"x"}]}`, "input[0]"},
		{"refused beside an input text part", `{"input":[{"role":"user","content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"` + big + `"},{"type":"input_text","text":5}]}]}`, "input[1].content[1]"},
		{"refused beside an output part", `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"` + big + `"},{"type":"input_text","text":5}]}]}`, "input[0].output[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			var err error
			alloc := allocs.Bytes(func() { _, err = DecodeCreateRequest(body) })
			if c.param == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var ae *Error
				if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != c.param {
					t.Fatalf("got %v, want a 400 of %s", err, c.param)
				}
			}
			bound := 3.5
			if c.param != "" {
				bound = 7.5
			}
			if ratio := float64(alloc) / float64(len(body)); ratio > bound {
				t.Errorf("decoding allocated %.1f times the body", ratio)
			}
		})
	}
}
