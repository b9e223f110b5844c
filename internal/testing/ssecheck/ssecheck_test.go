package ssecheck

import (
	"strings"
	"testing"
)

const good = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress"}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"r","status":"in_progress"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"m","type":"message","status":"in_progress"}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"m","output_index":0,"content_index":0,"delta":"hi"}

: keep-alive

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":5,"item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":"hi","annotations":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":{"id":"m","type":"message","status":"completed"}}

event: response.completed
data: {"type":"response.completed","sequence_number":7,"response":{"id":"r","status":"completed"}}

data: [DONE]

`

func TestParseAndCheck(t *testing.T) {
	evs, done, err := Parse(strings.NewReader(good))
	if err != nil || !done || len(evs) != 8 {
		t.Fatalf("parse: %d events, done=%v, err=%v", len(evs), done, err)
	}
	if err := Check(nil, evs); err != nil {
		t.Fatalf("a valid stream fails: %v", err)
	}
	if text, err := OutputText(evs); err != nil || text != "hi" {
		t.Fatalf("output text %q, %v", text, err)
	}
}

// Each broken stream is caught.
func TestCheckRejects(t *testing.T) {
	for name, mutate := range map[string]func(string) string{
		"sequence goes back": func(s string) string {
			return strings.Replace(s, `"sequence_number":5`, `"sequence_number":3`, 1)
		},
		"delta outside its part": func(s string) string {
			return strings.Replace(s, `"content_index":0,"delta"`, `"content_index":1,"delta"`, 1)
		},
		"two terminal events": func(s string) string {
			return strings.Replace(s, `"type":"response.output_item.done"`, `"type":"response.failed"`, 1)
		},
		"item index skips": func(s string) string {
			return strings.Replace(s, `"sequence_number":2,"output_index":0`, `"sequence_number":2,"output_index":1`, 1)
		},
		"event field disagrees": func(s string) string {
			return strings.Replace(s, "event: response.in_progress", "event: response.queued", 1)
		},
	} {
		evs, _, err := Parse(strings.NewReader(mutate(good)))
		if err == nil {
			err = Check(nil, evs)
		}
		if err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
