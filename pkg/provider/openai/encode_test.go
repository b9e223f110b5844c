package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// encodeRequests are requests of every shape encodeRequest meets: short
// and long messages, text that escapes to longer JSON, images, tools.
func encodeRequests() map[string]*provider.Request {
	user := func(s string) api.Item {
		return api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: s}}}
	}
	tool := api.ToolDefinition{Name: "lookup", Description: "Look <something> up & more", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string","description":"<&>"}}}`)}
	long := &provider.Request{Model: "m", Instructions: "Be brief."}
	for i := range 40 {
		id := fmt.Sprint("call_", i)
		long.Items = append(long.Items, api.Item{Type: api.ItemFunctionCall, CallID: id, Name: "lookup", Arguments: `{"q":"x"}`},
			api.Item{Type: api.ItemFunctionCallOutput, CallID: id, Output: strings.Repeat("result <line>\n", 100)})
	}
	return map[string]*provider.Request{
		"short": {Model: "m", Instructions: "Be brief.", Items: []api.Item{user("hi")}},
		"escapes": {Model: "m", Items: []api.Item{user(strings.Repeat("\x01<&>\"\\\u2028é", 500)),
			{Type: api.ItemMessage, Role: api.RoleAssistant, Content: []api.ContentPart{{Type: api.PartOutputText, Text: "ok"}}}}},
		"image": {Model: "m", Items: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{
			{Type: api.PartInputText, Text: "Look:"}, {Type: api.PartInputImage, ImageURL: "https://x/img.png", Detail: "low"}}}}},
		"tools": {Model: "m", Items: []api.Item{user("hi")}, Tools: []api.ToolDefinition{tool}, ToolChoice: "auto", MaxOutputTokens: new(int)},
		"long":  long,
	}
}

// encodeRequest gives json.Marshal's bytes of the chatwire.Request, as
// streamOf does, whether it encodes the body at once (short messages) or
// as a stream (long ones): the request decodes as a chatwire.Request with
// buildMessages' messages, and encodes again to the same bytes.
func TestEncodeRequestBytes(t *testing.T) {
	for name, req := range encodeRequests() {
		for _, stream := range []bool{false, true} {
			cr, err := buildRequest(req, stream, TokenLimitByModel)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(cr)
			if err != nil {
				t.Fatal(err)
			}
			var back chatwire.Request
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			if again, err := json.Marshal(&back); err != nil || !bytes.Equal(again, want) {
				t.Errorf("%s: as a chatwire.Request\n%s\nwant\n%s (%v)", name, again, want, err)
			}
			if msgs, _ := buildMessages(req); !reflect.DeepEqual(back.Messages, msgs) {
				t.Errorf("%s: messages\n%+v\nwant\n%+v", name, back.Messages, msgs)
			}
			b, done, rest, err := encodeRequest(cr, []byte("prefix"))
			if err != nil || !done || rest != nil && name != "long" {
				t.Fatalf("%s: done %v, rest %v, err %v", name, done, rest, err)
			}
			if got := bytes.TrimPrefix(b, []byte("prefix")); !bytes.Equal(got, want) {
				t.Errorf("%s: encodeRequest\n%s\nwant\n%s", name, got, want)
			}
			s, err := streamOf(cr)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(s); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: streamOf\n%s\nwant\n%s (%v)", name, got, want, err)
			}
			whole := messagesText(cr.Messages) <= wholeText
			if whole != (name != "long") {
				t.Errorf("%s: messagesText %d: encoded whole %v", name, messagesText(cr.Messages), whole)
			}
		}
	}
}

// messagesText bounds the messages' JSON: 6 bytes a byte it counts.
func TestMessagesTextBound(t *testing.T) {
	worst := strings.Repeat("\x01<>&\xff", 50)
	msgs := []chatwire.Message{
		{Role: "user", Content: &chatwire.Content{Text: worst}},
		{Role: "user", Content: &chatwire.Content{Parts: []chatwire.ContentPart{{Type: "text", Text: worst},
			{Type: "image_url", ImageURL: &chatwire.ImageURL{URL: worst, Detail: "low"}}}}},
		{Role: "assistant", Name: worst, Refusal: worst, ReasoningContent: worst, ToolCalls: []chatwire.ToolCall{
			{ID: worst, Type: "function", Function: chatwire.FunctionCall{Name: worst, Arguments: chatwire.Arguments(worst)}}, {}}},
		{Role: "tool", ToolCallID: worst},
		{}, {Content: &chatwire.Content{Parts: []chatwire.ContentPart{{}}}},
	}
	for i := range msgs {
		b, err := json.Marshal(msgs[i : i+1])
		if err != nil {
			t.Fatal(err)
		}
		if n := messagesText([]chatwire.OutMessage{msgs[i].Out()}); len(b) > 6*n {
			t.Errorf("message %d: %d bytes of JSON, messagesText %d", i, len(b), n)
		}
	}
}
