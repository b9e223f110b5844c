package api

import (
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/wirejson"
)

// encoders are the two ways wire values are encoded: wirejson on the
// gateway's hot paths, encoding/json elsewhere. Both must agree.
var encoders = map[string]func(any) ([]byte, error){"encoding/json": json.Marshal, "wirejson": wirejson.Marshal}

// TestMarshalShapes: every union is written in the shape of its type,
// with the null, [] and omission rules the wire spec needs.
func TestMarshalShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"message nil content", Item{Type: ItemMessage, ID: "m", Status: ItemCompleted, Role: RoleAssistant},
			`{"type":"message","id":"m","status":"completed","role":"assistant","content":[]}`},
		{"message with phase", Item{Type: ItemMessage, ID: "m", Status: ItemCompleted, Role: RoleAssistant, Phase: "final_answer",
			Content: []ContentPart{{Type: PartOutputText, Text: "<hi>"}}},
			`{"type":"message","id":"m","status":"completed","role":"assistant","content":[{"type":"output_text","text":"\u003chi\u003e","annotations":[]}],"phase":"final_answer"}`},
		{"function call", Item{Type: ItemFunctionCall, ID: "fc", CallID: "c", Name: "f", Status: ItemCompleted},
			`{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"","status":"completed"}`},
		{"function call output text", Item{Type: ItemFunctionCallOutput, ID: "o", CallID: "c", Output: "84", Status: ItemCompleted, IsError: true},
			`{"type":"function_call_output","id":"o","call_id":"c","output":"84","status":"completed","is_error":true}`},
		{"function call output parts", Item{Type: ItemFunctionCallOutput, ID: "o", CallID: "c", Output: "ignored", OutputParts: []ContentPart{}},
			`{"type":"function_call_output","id":"o","call_id":"c","output":[],"status":""}`},
		{"reasoning bare", Item{Type: ItemReasoning, ID: "r"}, `{"type":"reasoning","id":"r","summary":[]}`},
		{"reasoning full", Item{Type: ItemReasoning, ID: "r", Content: []ContentPart{{Type: PartReasoningText, Text: "t"}}, EncryptedContent: "e", Status: ItemCompleted},
			`{"type":"reasoning","id":"r","summary":[],"content":[{"type":"reasoning_text","text":"t"}],"encrypted_content":"e","status":"completed"}`},
		{"item reference", Item{Type: ItemReference, ID: "x", Status: "ignored"}, `{"type":"item_reference","id":"x"}`},
		{"compaction", Item{Type: ItemCompaction, ID: "cmp_1", Status: "ignored", Role: "ignored", EncryptedContent: "k.abc"},
			`{"type":"compaction","id":"cmp_1","encrypted_content":"k.abc"}`},

		{"output text logprobs", ContentPart{Type: PartOutputText, Text: "a", Annotations: []json.RawMessage{json.RawMessage(`{"type": "x"}`)}, Logprobs: []json.RawMessage{json.RawMessage(`1`)}},
			`{"type":"output_text","text":"a","annotations":[{"type":"x"}],"logprobs":[1]}`},
		{"refusal", ContentPart{Type: PartRefusal, Refusal: "no", Text: "ignored"}, `{"type":"refusal","refusal":"no"}`},
		{"input image default detail", ContentPart{Type: PartInputImage, ImageURL: "u"}, `{"type":"input_image","image_url":"u","detail":"auto"}`},
		{"input image file", ContentPart{Type: PartInputImage, FileID: "f", Detail: "low"}, `{"type":"input_image","file_id":"f","detail":"low"}`},
		{"input file", ContentPart{Type: PartInputFile, Filename: "a.txt", FileData: "d"}, `{"type":"input_file","file_data":"d","filename":"a.txt"}`},
		{"input text", ContentPart{Type: PartInputText, Text: "", ImageURL: "ignored"}, `{"type":"input_text","text":""}`},

		{"function tool bare", Tool{Type: ToolFunction, Name: "f"}, `{"type":"function","name":"f","description":null,"parameters":null,"strict":null}`},
		{"function tool full", Tool{Type: ToolFunction, Name: "f", Description: Ptr("d"), Parameters: json.RawMessage("{\n \"type\": \"object\"}"), Strict: Ptr(true)},
			`{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}`},
		{"hosted tool", Tool{Type: "lambent:calculator"}, `{"type":"lambent:calculator"}`},
		{"mcp tool hides secrets", Tool{Type: ToolMCP, ServerLabel: "l", ServerURL: "https://x", Headers: map[string]string{"k": "v"}, Authorization: "secret",
			RequireApproval: json.RawMessage(`"never"`)},
			`{"type":"mcp","server_label":"l","server_url":"https://x","require_approval":"never"}`},

		{"tool choice default", ToolChoice{}, `"auto"`},
		{"tool choice mode", ToolChoice{Mode: ToolChoiceRequired}, `"required"`},
		{"tool choice function", ToolChoice{Type: ToolFunction, Name: "f", Mode: "ignored"}, `{"type":"function","name":"f"}`},
		{"tool choice allowed", ToolChoice{Type: "allowed_tools", Mode: ToolChoiceAuto, Tools: []ToolRef{{Type: ToolFunction, Name: "f"}, {Type: "lambent:calculator"}}},
			`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},{"type":"lambent:calculator"}]}`},

		{"error body", ErrorBody{Error: InvalidRequest("", "bad")}, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`},
		{"error with code", NotFound("id", "not_found", "gone"), `{"message":"gone","type":"invalid_request_error","param":"id","code":"not_found"}`},
		{"delta event", &StreamEvent{Type: EventOutputTextDelta, SequenceNumber: 3, ItemID: "m", OutputIndex: Ptr(0), ContentIndex: Ptr(0), Delta: Ptr("")},
			`{"type":"response.output_text.delta","sequence_number":3,"output_index":0,"item_id":"m","content_index":0,"delta":""}`},
		{"error event", Ptr(NewErrorEvent(ServerError(nil, "boom"))),
			`{"type":"error","sequence_number":0,"error":{"type":"server_error","code":"server_error","message":"boom","param":null}}`},
		{"item list", &ItemList{Object: "list", Data: []Item{{Type: ItemReference, ID: "x"}}, FirstID: Ptr("x"), LastID: Ptr("x")},
			`{"object":"list","data":[{"type":"item_reference","id":"x"}],"first_id":"x","last_id":"x","has_more":false}`},
	} {
		for enc, marshal := range encoders {
			got, err := marshal(tc.v)
			if err != nil {
				t.Errorf("%s, %s: %v", tc.name, enc, err)
				continue
			}
			if string(got) != tc.want {
				t.Errorf("%s, %s:\n got %s\nwant %s", tc.name, enc, got, tc.want)
			}
		}
	}
}

// TestMarshalResponse: a response writes every field of ResponseResource,
// nil output, tools and metadata as empty ones, and embedded in an event
// the same bytes.
func TestMarshalResponse(t *testing.T) {
	r := &Response{ID: "resp_1", Object: "response", Status: StatusInProgress, ToolChoice: ToolChoice{Mode: ToolChoiceNone},
		Text: TextConfig{Format: TextFormat{Type: FormatText}}, TopP: 1}
	const want = `{"id":"resp_1","access_programs":null,"object":"response","created_at":0,"completed_at":null,"status":"in_progress","incomplete_details":null,` +
		`"model":"","previous_response_id":null,"instructions":null,"output":[],"error":null,"tools":[],"tool_choice":"none",` +
		`"truncation":"","parallel_tool_calls":false,"text":{"format":{"type":"text"}},"top_p":1,"presence_penalty":0,` +
		`"frequency_penalty":0,"top_logprobs":0,"temperature":0,"reasoning":null,"usage":null,"max_output_tokens":null,` +
		`"max_tool_calls":null,"store":false,"background":false,"service_tier":"","metadata":{},"safety_identifier":null,"prompt_cache_key":null}`
	for enc, marshal := range encoders {
		got, err := marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s:\n got %s\nwant %s", enc, got, want)
		}
		if r.Output != nil || r.Tools != nil || r.Metadata != nil {
			t.Fatal("MarshalJSON changed the response")
		}
		ev, err := marshal(&StreamEvent{Type: EventResponseCreated, Response: r})
		if err != nil {
			t.Fatal(err)
		}
		if w := `{"type":"response.created","sequence_number":0,"response":` + want + `}`; string(ev) != w {
			t.Fatalf("%s event:\n got %s\nwant %s", enc, ev, w)
		}
	}
}

// TestResponseMarshalJSONIsMarshal: a response's own MarshalJSON (what the
// HTTP transport calls) writes what Marshal writes, escapes included.
func TestResponseMarshalJSONIsMarshal(t *testing.T) {
	r := benchResponse()
	r.Output[2].Content[0].Text += " <b>&amp;</b> \u2028 \xff"
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.MarshalJSON()
	if err != nil || string(got) != string(want) {
		t.Fatalf("MarshalJSON = %s, %v\nwant %s", got, err, want)
	}
}

// TestResponseJSONStream: a response's MarshalJSON, which encodes its
// items and tools in place (a wirejson.Stream of its Shell), and an event's
// stream of it are the bytes encoding/json writes for the response's fields
// through each item's and tool's MarshalJSON, also when a tool's schema
// holds empty "output" and "tools" arrays, and with no output at all.
func TestResponseJSONStream(t *testing.T) {
	r := benchResponse()
	r.Output[2].Content[0].Text += " <b>&amp;</b> \u2028 \xff"
	schema := *r
	schema.Tools = []Tool{{Type: ToolFunction, Name: "f", Parameters: json.RawMessage(`{"type":"object","default":{"output":[],"tools" : []}}`)},
		{Type: "web_search", Raw: json.RawMessage(`{"type":"web_search","filters":{"tools":[]}}`)}}
	for name, r := range map[string]*Response{"items": r, "schema": &schema, "none": {ID: "resp_1"}} {
		want, err := json.Marshal(r.wire())
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.MarshalJSON()
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: MarshalJSON = %s, %v\nwant %s", name, got, err, want)
		}
		ev := &StreamEvent{Type: EventResponseCompleted, SequenceNumber: 9, Response: r}
		shell := *ev
		var arrays []wirejson.Array
		shell.Response, arrays = r.Shell()
		s, err := wirejson.NewStream(ev, shell.Wire(), arrays...)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(s)
		wantEv, _ := json.Marshal(ev)
		if err != nil || string(got) != string(wantEv) {
			t.Errorf("%s: event stream = %s, %v\nwant %s", name, got, err, wantEv)
		}
	}
}

// TestResponseLeavesOutSetAsideItems: the output items set aside
// (ItemHidden.Aside) are in no encoding of the response a client gets
// (MarshalJSON, Shell for the streaming writers, a lifecycle event), and
// in the stored record's (StoredShell), which keeps them.
func TestResponseLeavesOutSetAsideItems(t *testing.T) {
	r := benchResponse()
	r.Output[0].Hidden.Aside = true
	aside := r.Output[0].ID
	shownOnly := *r
	shownOnly.Output = r.Output[1:]
	want, err := shownOnly.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	stream := func(shell func() (*Response, []wirejson.Array)) string {
		c, arrays := shell()
		s, err := wirejson.NewStream(r, c, arrays...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got, err := r.MarshalJSON()
	ev, evErr := wirejson.Marshal((&StreamEvent{Type: EventResponseCompleted, Response: r}).Wire())
	switch {
	case err != nil || evErr != nil:
		t.Fatal(err, evErr)
	case string(got) != string(want):
		t.Errorf("MarshalJSON = %s\nwant %s", got, want)
	case stream(r.Shell) != string(want):
		t.Errorf("Shell streams %s\nwant %s", stream(r.Shell), want)
	case strings.Contains(string(ev), aside):
		t.Errorf("the terminal event holds the set-aside item: %s", ev)
	case !strings.Contains(stream(r.StoredShell), aside):
		t.Errorf("StoredShell leaves out the set-aside item")
	}
	if len(Shown(r.Output)) != len(r.Output)-1 || !r.Output[0].Hidden.Aside {
		t.Errorf("Shown changed its argument or kept the item")
	}
}

// TestStreamEventWire: what the streaming writers encode (Wire) is the
// event's JSON byte for byte, for lifecycle events (responses with and
// without nil output, tools and metadata, escapes included) and for the
// others, and the response is left as it was.
func TestStreamEventWire(t *testing.T) {
	full := benchResponse()
	full.Output[2].Content[0].Text += " <b>&amp;</b> \u2028 \xff"
	bare := &Response{ID: "resp_1", Object: "response", Status: StatusInProgress}
	withNils := benchResponse()
	withNils.Metadata = nil
	idx := 0
	for _, ev := range []*StreamEvent{
		{Type: EventResponseCreated, Response: bare},
		{Type: EventResponseInProgress, SequenceNumber: 1, Response: withNils},
		{Type: EventResponseCompleted, SequenceNumber: 9, Response: full},
		{Type: EventOutputItemAdded, SequenceNumber: 2, OutputIndex: &idx, Item: &full.Output[2]},
		{Type: EventOutputItemDone, SequenceNumber: 4, OutputIndex: &idx, Item: &full.Output[0]},
		{Type: EventOutputItemAdded, SequenceNumber: 5, OutputIndex: &idx, Item: &Item{Type: ItemMessage, ID: "msg_2", Status: ItemInProgress, Role: RoleAssistant, Content: []ContentPart{}}},
		{Type: EventOutputItemDone, SequenceNumber: 6, OutputIndex: &idx, Item: &Item{Type: ItemReasoning, ID: "rs_1", Status: ItemCompleted,
			Content: []ContentPart{{Type: PartReasoningText, Text: "hm <"}}, EncryptedContent: "e"}},
		{Type: EventContentPartAdded, SequenceNumber: 7, ItemID: "msg_1", OutputIndex: &idx, ContentIndex: &idx, Part: &ContentPart{Type: PartOutputText}},
		{Type: EventContentPartDone, SequenceNumber: 8, ItemID: "msg_1", OutputIndex: &idx, ContentIndex: &idx, Part: &full.Output[2].Content[0]},
		{Type: EventContentPartDone, SequenceNumber: 9, ItemID: "msg_1", OutputIndex: &idx, ContentIndex: &idx, Part: &ContentPart{Type: PartRefusal, Refusal: "no & <no>"}},
		{Type: EventOutputTextDelta, SequenceNumber: 3, OutputIndex: &idx, ContentIndex: &idx, ItemID: "msg_1", Delta: Ptr("<3")},
		{Type: "odd", Response: full, ItemID: "x"},
		{Type: "odd", Response: full, Item: &full.Output[0]},
		{Type: "odd", Item: &full.Output[1], Part: &full.Output[2].Content[0], Text: Ptr("t"), Delta: Ptr("d"), Logprobs: &[]any{1},
			Annotation: map[string]string{"a": "<"}, Error: &ErrorPayload{Type: "x"}, SummaryIndex: &idx, AnnotationIndex: &idx,
			Arguments: Ptr("{}"), Input: Ptr("i"), Refusal: Ptr("r")},
	} {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wirejson.Marshal(ev.Wire())
		if err != nil || string(got) != string(want) {
			t.Errorf("Wire of %s = %s, %v\nwant %s", ev.Type, got, err, want)
		}
	}
	if bare.Output != nil || bare.Tools != nil || bare.Metadata != nil || withNils.Metadata != nil {
		t.Error("Wire changed the response")
	}
}

// plainResponse is a Response encoded field by field by encoding/json,
// each through its own MarshalJSON: the reference of responseWire.
type plainResponse Response

// TestResponseWire: a response's wire (what its MarshalJSON and its
// lifecycle events encode) is the bytes encoding/json writes for its
// fields through their own MarshalJSON methods, for every shape of tool
// choice and text format, escapes included.
func TestResponseWire(t *testing.T) {
	schema := json.RawMessage("{\n \"type\": \"object\", \"description\": \"<b>\"}")
	var i int
	for _, choice := range []ToolChoice{{}, {Mode: ToolChoiceNone}, {Mode: ToolChoiceRequired}, {Type: ToolFunction, Name: "f<"},
		{Type: ToolCustom, Name: "c", Namespace: "ns"}, {Type: "allowed_tools", Mode: ToolChoiceAuto, Tools: []ToolRef{{Type: ToolFunction, Name: "f"}}},
		{Type: ToolShell}} {
		for _, text := range []TextConfig{{}, {Format: TextFormat{Type: FormatText}, Verbosity: "low"}, {Format: TextFormat{Type: FormatJSONObject}},
			{Format: TextFormat{Type: FormatJSONSchema, Name: "s", Schema: schema}},
			{Format: TextFormat{Type: FormatJSONSchema, Name: "s", Description: Ptr("d&"), Schema: schema, Strict: Ptr(true)}, Verbosity: "high"}} {
			i++
			r := benchResponse()
			r.ToolChoice, r.Text = choice, text
			r.Instructions, r.Lambent = Ptr("<be brief>"), &LambentInfo{}
			want, err := json.Marshal((*plainResponse)(r))
			if err != nil {
				t.Fatal(err)
			}
			for enc, marshal := range encoders {
				got, err := marshal(r.wire())
				if err != nil || string(got) != string(want) {
					t.Errorf("%d, %s: wire = %s, %v\nwant %s", i, enc, got, err, want)
				}
			}
			got, err := r.MarshalJSON()
			if err != nil || string(got) != string(want) {
				t.Errorf("%d: MarshalJSON = %s, %v\nwant %s", i, got, err, want)
			}
		}
	}
}

// TestResponseWireMirrorsResponse: responseWire has Response's fields, in
// order, with the same JSON names and options; the output items, the
// tools, the tool choice, the text configuration and the metadata are
// those of their shapes.
func TestResponseWireMirrorsResponse(t *testing.T) {
	want, got := reflect.TypeFor[Response](), reflect.TypeFor[responseWire]()
	if got.NumField() != want.NumField() {
		t.Fatalf("responseWire has %d fields, Response %d", got.NumField(), want.NumField())
	}
	shapes := map[string]reflect.Type{"Output": reflect.TypeFor[[]any](), "Tools": reflect.TypeFor[[]any](), "ToolChoice": reflect.TypeFor[any](), "Text": reflect.TypeFor[textConfigWire](), "Metadata": reflect.TypeFor[any]()}
	for i := range want.NumField() {
		w, g := want.Field(i), got.Field(i)
		wantType := w.Type
		if s, ok := shapes[w.Name]; ok {
			wantType = s
		}
		if g.Name != w.Name || g.Tag != w.Tag || g.Type != wantType {
			t.Errorf("responseWire field %d is %s %s %q, want %s %s %q", i, g.Name, g.Type, g.Tag, w.Name, wantType, w.Tag)
		}
	}
	tc, tcw := reflect.TypeFor[TextConfig](), reflect.TypeFor[textConfigWire]()
	for i := range tc.NumField() {
		if tc.Field(i).Name != tcw.Field(i).Name || tc.Field(i).Tag != tcw.Field(i).Tag {
			t.Errorf("textConfigWire field %d is %s %q, want %s %q", i, tcw.Field(i).Name, tcw.Field(i).Tag, tc.Field(i).Name, tc.Field(i).Tag)
		}
	}
	if tc.NumField() != tcw.NumField() {
		t.Errorf("textConfigWire has %d fields, TextConfig %d", tcw.NumField(), tc.NumField())
	}
}

// TestStreamEventWireErrors: an event whose item cannot be encoded fails
// to encode through Wire as it does whole.
func TestStreamEventWireErrors(t *testing.T) {
	ev := &StreamEvent{Type: EventOutputItemAdded, OutputIndex: Ptr(0), Item: &Item{Type: "bogus"}}
	if _, err := wirejson.Marshal(ev.Wire()); err == nil || !strings.Contains(err.Error(), `cannot marshal item of type "bogus"`) {
		t.Errorf("Wire of an unknown item: %v", err)
	}
}

// TestEventWireMirrorsStreamEvent: eventWire has StreamEvent's fields but
// its response, in order, with the same JSON names and options, an item
// and a part of any type.
func TestEventWireMirrorsStreamEvent(t *testing.T) {
	var want []reflect.StructField
	typ := reflect.TypeFor[StreamEvent]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Name != "Response" {
			want = append(want, f)
		}
	}
	got := reflect.TypeFor[eventWire]()
	if got.NumField() != len(want) {
		t.Fatalf("eventWire has %d fields, StreamEvent %d besides Response", got.NumField(), len(want))
	}
	for i, w := range want {
		g := got.Field(i)
		wantType := w.Type
		if w.Name == "Item" || w.Name == "Part" {
			wantType = reflect.TypeFor[any]()
		}
		if g.Name != w.Name || g.Tag != w.Tag || g.Type != wantType {
			t.Errorf("eventWire field %d is %s %s %q, want %s %s %q", i, g.Name, g.Type, g.Tag, w.Name, wantType, w.Tag)
		}
	}
}

// TestWireCoversEveryField: an event with any field set besides its type,
// sequence number and response is encoded as it is (onlyResponse knows
// every field of StreamEvent).
func TestWireCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[StreamEvent]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Name {
		case "Type", "SequenceNumber", "Response":
			continue
		}
		ev := &StreamEvent{Type: EventResponseCompleted, Response: &Response{}}
		v := reflect.ValueOf(ev).Elem().Field(i)
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.String:
			v.SetString("x")
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 0, 0))
		case reflect.Interface:
			v.Set(reflect.ValueOf(1))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, v.Kind())
		}
		if w, ok := ev.Wire().(*StreamEvent); !ok || w != ev {
			t.Errorf("an event with %s set is encoded as a lifecycle event", f.Name)
		}
	}
}

// TestMarshalErrors: values the wire cannot carry fail to encode.
func TestMarshalErrors(t *testing.T) {
	for enc, marshal := range encoders {
		if _, err := marshal(Item{Type: "bogus"}); err == nil || !strings.Contains(err.Error(), `cannot marshal item of type "bogus"`) {
			t.Errorf("%s, unknown item type: %v", enc, err)
		}
		if _, err := marshal(&Response{Temperature: math.NaN()}); err == nil {
			t.Errorf("%s: NaN temperature encoded", enc)
		}
		if _, err := marshal(Tool{Type: ToolFunction, Parameters: json.RawMessage("{")}); err == nil {
			t.Errorf("%s: invalid parameters encoded", enc)
		}
	}
}

// TestResponseWithUnknownItemFails: a response holding an item of a type
// that has no wire shape fails to encode, naming the type: in one piece,
// as a stream of its Shell, and in an item event.
func TestResponseWithUnknownItemFails(t *testing.T) {
	r := &Response{ID: "resp_1", Output: []Item{{Type: "no_such_item"}}}
	if _, err := r.MarshalJSON(); err == nil || !strings.Contains(err.Error(), "no_such_item") {
		t.Errorf("MarshalJSON: err %v, want one naming the item type", err)
	}
	shell, arrays := r.Shell()
	s, err := wirejson.NewStream(r, shell.wire(), arrays...)
	if err == nil {
		_, err = io.ReadAll(s)
	}
	if err == nil || !strings.Contains(err.Error(), "no_such_item") {
		t.Errorf("stream: err %v, want one naming the item type", err)
	}
	ev := &StreamEvent{Type: EventOutputItemDone, OutputIndex: Ptr(0), Item: &r.Output[0]}
	if _, err := wirejson.Marshal(ev.Wire()); err == nil || !strings.Contains(err.Error(), "no_such_item") {
		t.Errorf("event: err %v, want one naming the item type", err)
	}
}
