package api

import (
	"encoding/json"
	"testing"

	"github.com/lambent/lambent/internal/wirejson"
)

// benchResponse is a completed response of a typical agentic turn: a
// hosted tool call, its output and the assistant's answer, with usage and
// the request's tools echoed (about 2 KB of JSON).
func benchResponse() *Response {
	completed := int64(1767225600)
	const id = "18a2b3c4d5e6f708a1b2c3d4e5f60718293a4b5c6d7e8f90"
	return &Response{
		ID: PrefixResponse + id, Object: "response", CreatedAt: 1767225600, CompletedAt: &completed,
		Status: StatusCompleted, Model: "test-model",
		Output: []Item{
			{Type: ItemFunctionCall, ID: PrefixFunctionCall + id, Status: ItemCompleted, CallID: "call_" + id[:24],
				Name: "calculator", Arguments: `{"expression":"12*(3+4)"}`},
			{Type: ItemFunctionCallOutput, ID: PrefixFuncOutput + id, Status: ItemCompleted, CallID: "call_" + id[:24], Output: "84"},
			{Type: ItemMessage, ID: PrefixMessage + id, Status: ItemCompleted, Role: RoleAssistant,
				Content: []ContentPart{{Type: PartOutputText, Text: "12 × (3 + 4) is 84. Let me know if you need anything else <3"}}},
		},
		Tools: []Tool{
			{Type: ToolFunction, Name: "get_weather", Description: Ptr("Current weather for a city."),
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Type: HostedPrefix + "calculator"},
		},
		ToolChoice: ToolChoice{Mode: ToolChoiceAuto}, Truncation: "disabled", ParallelToolCalls: true,
		Text: TextConfig{Format: TextFormat{Type: FormatText}}, TopP: 1, Temperature: 1,
		Usage: &Usage{InputTokens: 212, OutputTokens: 48, TotalTokens: 260},
		Store: true, ServiceTier: "default", Metadata: map[string]string{"team": "docs"},
	}
}

// BenchmarkMarshal measures the encoding of the gateway's hot values: a
// whole response (a non-streaming body: MarshalJSON, which the HTTP writer
// calls, items and tools encoded in place; response.completed), the
// response.created event (twice per stream before the first token), the
// item and part events of a message (two of each per message) and an
// output_text.delta event (one per streamed token), by wirejson (the HTTP
// and SSE writers; the SSE writer encodes what StreamEvent.Wire gives into
// its buffer) and by encoding/json at the top (everything else).
func BenchmarkMarshal(b *testing.B) {
	r := benchResponse()
	created := &Response{ID: r.ID, Object: "response", CreatedAt: r.CreatedAt, Status: StatusInProgress, Model: r.Model,
		ToolChoice: r.ToolChoice, Truncation: r.Truncation, ParallelToolCalls: true, Text: r.Text, TopP: 1, Temperature: 1,
		Store: true, ServiceTier: "auto"}
	for _, bc := range []struct {
		name string
		v    any
	}{
		{"response", r},
		{"response.created", &StreamEvent{Type: EventResponseCreated, Response: created}},
		{"output_item.done", &StreamEvent{Type: EventOutputItemDone, SequenceNumber: 20, OutputIndex: Ptr(2), Item: &r.Output[2]}},
		{"content_part.added", &StreamEvent{Type: EventContentPartAdded, SequenceNumber: 3, ItemID: r.Output[2].ID,
			OutputIndex: Ptr(2), ContentIndex: Ptr(0), Part: &ContentPart{Type: PartOutputText}}},
		{"output_text.delta", &StreamEvent{Type: EventOutputTextDelta, SequenceNumber: 7, ItemID: r.Output[2].ID,
			OutputIndex: Ptr(2), ContentIndex: Ptr(0), Delta: Ptr("word ")}},
	} {
		if r, ok := bc.v.(*Response); ok {
			// What the HTTP writer calls for a response body.
			b.Run(bc.name+"/MarshalJSON", func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					out, err := r.MarshalJSON()
					if err != nil {
						b.Fatal(err)
					}
					n = len(out)
				}
				b.SetBytes(int64(n))
			})
		}
		if ev, ok := bc.v.(*StreamEvent); ok {
			b.Run(bc.name+"/wirejson-Wire", func(b *testing.B) {
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					var err error
					if buf, err = wirejson.Append(buf[:0], ev.Wire()); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(len(buf)))
			})
		}
		for _, enc := range []string{"wirejson", "encoding/json"} {
			marshal := encoders[enc]
			b.Run(bc.name+"/"+enc, func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					out, err := marshal(bc.v)
					if err != nil {
						b.Fatal(err)
					}
					n = len(out)
				}
				b.SetBytes(int64(n))
			})
		}
	}
}
