package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// benchResponse is a completed response like the ones `make bench`
// produces: one assistant message, usage, defaults (about 1.1 KB of JSON).
func benchResponse() *Response {
	completed := int64(1767225600)
	return &Response{
		ID: "resp_18a2b3c4d5e6f708a1b2c3d4e5f60718293a4b5c6d7e8f90", Object: "response", CreatedAt: 1767225600, CompletedAt: &completed,
		Status: StatusCompleted, Model: "test-model",
		Output: []Item{{Type: ItemMessage, ID: "msg_18a2b3c4d5e6f708a1b2c3d4e5f60718293a4b5c6d7e8f90", Status: ItemCompleted, Role: RoleAssistant,
			Content: []ContentPart{{Type: PartOutputText, Text: "Hello! This is a short answer from the fake backend, sent word by word."}}}},
		ToolChoice: ToolChoice{Mode: ToolChoiceAuto}, Truncation: "disabled", ParallelToolCalls: true,
		Text: TextConfig{Format: TextFormat{Type: FormatText}}, TopP: 1, Temperature: 1,
		Usage: &Usage{InputTokens: 12, OutputTokens: 16, TotalTokens: 28},
		Store: true, ServiceTier: "default",
	}
}

func BenchmarkResponseJSON(b *testing.B) {
	r := benchResponse()
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Encoder", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := json.NewEncoder(&buf).Encode(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf = r.AppendJSON(buf[:0])
		}
		b.SetBytes(int64(len(buf)))
	})
}

func BenchmarkEventJSON(b *testing.B) {
	idx := 0
	delta := "word "
	evs := map[string]*StreamEvent{
		"response.created": {Type: EventResponseCreated, SequenceNumber: 0, Response: benchResponse()},
		"output_text.delta": {Type: EventOutputTextDelta, SequenceNumber: 7, ItemID: "msg_18a2b3c4d5e6f708a1b2c3d4e5f60718293a4b5c6d7e8f90",
			OutputIndex: &idx, ContentIndex: &idx, Delta: &delta, Logprobs: []any{}},
	}
	for name, ev := range evs {
		b.Run(name+"/Encoder", func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := json.NewEncoder(&buf).Encode(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/AppendJSON", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for b.Loop() {
				buf = ev.AppendJSON(buf[:0])
			}
		})
	}
}
