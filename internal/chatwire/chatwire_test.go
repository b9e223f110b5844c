package chatwire_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/wirejson"
)

func TestMessageContent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *chatwire.Content
		text string
	}{
		{`{"role":"user","content":"hi"}`, &chatwire.Content{Text: "hi"}, "hi"},
		{`{"role":"user","content":""}`, &chatwire.Content{}, ""},
		{`{"role":"assistant","content":null}`, nil, ""},
		{`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"refusal","refusal":"r"}]}`,
			&chatwire.Content{Parts: []chatwire.ContentPart{{Type: "text", Text: "a"}, {Type: "image_url", ImageURL: &chatwire.ImageURL{URL: "u"}}, {Type: "refusal", Refusal: "r"}}}, "ar"},
		{`{"role":"user","content":[]}`, &chatwire.Content{Parts: []chatwire.ContentPart{}}, ""},
	} {
		var m chatwire.Message
		if err := json.Unmarshal([]byte(tc.in), &m); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !reflect.DeepEqual(m.Content, tc.want) || m.Content.String() != tc.text {
			t.Errorf("%s: content %+v %q", tc.in, m.Content, m.Content.String())
		}
		out, err := json.Marshal(&m)
		if err != nil || string(out) != tc.in {
			t.Errorf("%s: encoded as %s %v", tc.in, out, err)
		}
	}
	var m chatwire.Message
	if err := json.Unmarshal([]byte(`{"content":7}`), &m); err == nil {
		t.Errorf("content 7 decoded: %+v", m.Content)
	}
}

func TestArguments(t *testing.T) {
	for in, want := range map[string]chatwire.Arguments{
		`{"arguments":"{\"a\":1}"}`: `{"a":1}`,
		`{"arguments":{"a": [1]}}`:  `{"a": [1]}`,
		`{"arguments":null}`:        "",
		`{"arguments":""}`:          "",
		`{}`:                        "",
	} {
		var f chatwire.FunctionCall
		if err := json.Unmarshal([]byte(in), &f); err != nil || f.Arguments != want {
			t.Errorf("%s: %q %v", in, f.Arguments, err)
		}
	}
	out, _ := json.Marshal(chatwire.FunctionCall{Name: "f", Arguments: `{"a":1}`})
	if string(out) != `{"name":"f","arguments":"{\"a\":1}"}` {
		t.Errorf("encoded as %s", out)
	}
}

// Nulls the API requires are encoded; optional fields are left out.
func TestCompletionEncoding(t *testing.T) {
	stop := "stop"
	c := chatwire.Completion{ID: "c", Object: "chat.completion", Model: "m", Choices: []chatwire.Choice{
		{Message: &chatwire.ResponseMessage{Role: "assistant", Annotations: []json.RawMessage{}}, FinishReason: &stop},
		{Index: 1, Delta: &chatwire.Delta{}},
	}}
	out, err := json.Marshal(&c)
	want := `{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[` +
		`{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"},` +
		`{"index":1,"delta":{},"logprobs":null,"finish_reason":null}]}`
	if err != nil || string(out) != want {
		t.Errorf("encoded as\n%s\nwant\n%s", out, want)
	}
	r := chatwire.Request{StreamOptions: &chatwire.StreamOptions{IncludeUsage: true}}
	if !r.IncludeUsage() || (chatwire.Request{}).IncludeUsage() {
		t.Error("IncludeUsage")
	}
}

// An answer's content is a string, or Mistral's array of thinking and text
// parts; it encodes as the string.
func TestAnswer(t *testing.T) {
	for in, want := range map[string]*chatwire.Answer{
		`{"content":"hi"}`: {Text: "hi"},
		`{"content":null}`: nil,
		`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"closed":true},{"type":"text","text":"c"},{"type":"reference","reference_ids":[1]},{"type":"text","text":"d"}]}`: {Text: "cd", Thinking: "ab"},
		`{"content":[{"type":"thinking","thinking":"s"}]}`: {Thinking: "s"},
		`{"content":[]}`: {},
	} {
		var d chatwire.Delta
		if err := json.Unmarshal([]byte(in), &d); err != nil || !reflect.DeepEqual(d.Content, want) {
			t.Errorf("%s: %+v %v", in, d.Content, err)
		}
	}
	for _, in := range []string{`{"content":["x"]}`, `{"content":[{"type":"thinking","thinking":7}]}`, `{"content":7}`} {
		var d chatwire.Delta
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s: decoded as %+v", in, d.Content)
		}
	}
	out, err := json.Marshal(chatwire.Delta{Content: &chatwire.Answer{Text: "x", Thinking: "y"}})
	if err != nil || string(out) != `{"content":"x"}` {
		t.Errorf("encoded as %s %v", out, err)
	}
	if (*chatwire.Answer)(nil).String() != "" || (*chatwire.Answer)(nil).Reasoning() != "" {
		t.Error("nil answer")
	}
}

// An OutMessage has Message's fields in Message's order, and encodes as
// the Message does, with encoding/json and with wirejson, text escapes and
// invalid UTF-8 included.
func TestOutMessage(t *testing.T) {
	mt, ot := reflect.TypeFor[chatwire.Message](), reflect.TypeFor[chatwire.OutMessage]()
	if mt.NumField() != ot.NumField() {
		t.Fatalf("Message has %d fields, OutMessage %d", mt.NumField(), ot.NumField())
	}
	for i := range mt.NumField() {
		if f, g := mt.Field(i), ot.Field(i); f.Name != g.Name || f.Tag != g.Tag || f.Type != g.Type && f.Name != "Content" {
			t.Errorf("field %d: Message's %s %s %q, OutMessage's %s %s %q", i, f.Name, f.Type, f.Tag, g.Name, g.Type, g.Tag)
		}
	}
	text := "\x01<&>\"\\\u2028é\xff"
	for _, m := range []chatwire.Message{
		{Role: "user", Content: &chatwire.Content{Text: text}},
		{Role: "user", Content: &chatwire.Content{}},
		{Role: "user", Content: &chatwire.Content{Parts: []chatwire.ContentPart{{Type: "text", Text: text},
			{Type: "image_url", ImageURL: &chatwire.ImageURL{URL: "https://x/<a>", Detail: "low"}}}}},
		{Role: "user", Content: &chatwire.Content{Text: "ignored", Parts: []chatwire.ContentPart{}}},
		{Role: "assistant", ToolCalls: []chatwire.ToolCall{{ID: "c", Type: "function", Function: chatwire.FunctionCall{Name: "f", Arguments: `{"a":"<"}`}}},
			Refusal: text, ReasoningContent: text, Name: "n"},
		{Role: "tool", ToolCallID: "c", Content: &chatwire.Content{Text: text}},
	} {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		out := m.Out()
		for _, enc := range []func(any) ([]byte, error){json.Marshal, wirejson.Marshal} {
			if got, err := enc(&out); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%+v: OutMessage %s, Message %s (%v)", m, got, want, err)
			}
		}
	}
}
