// Package ssecheck parses Server-Sent Event streams of the Responses API
// and checks their invariants: schema validity, one response.created and
// response.in_progress first, exactly one terminal event last, strictly
// increasing sequence numbers, and the item lifecycle order (item added →
// content part added → deltas → done → item done) with increasing
// output_index.
package ssecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/lambent/lambent/internal/testing/schema"
)

// Event is one parsed SSE event.
type Event struct {
	// Name is the "event:" field.
	Name string
	// Data is the "data:" payload.
	Data json.RawMessage
	// Type, Seq, OutputIndex, ItemID are read from Data.
	Type        string
	Seq         int64
	OutputIndex *int
	ItemID      string
	Item        *struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	ContentIndex *int
	Response     *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
}

// Parse reads a whole stream: events, and whether it ended with [DONE].
func Parse(r io.Reader) ([]Event, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var evs []Event
	var name string
	var data []byte
	done := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data == nil {
				name = ""
				continue
			}
			if string(data) == "[DONE]" {
				done = true
			} else {
				ev, err := Decode(data)
				if err != nil {
					return evs, done, err
				}
				ev.Name = name
				evs = append(evs, ev)
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if data != nil {
				return evs, done, fmt.Errorf("ssecheck: multi-line data field")
			}
			data = []byte(strings.TrimPrefix(line, "data: "))
		default:
			return evs, done, fmt.Errorf("ssecheck: unexpected line %q", line)
		}
	}
	return evs, done, sc.Err()
}

// Decode parses one event payload.
func Decode(data []byte) (Event, error) {
	var ev struct {
		Type           string `json:"type"`
		SequenceNumber *int64 `json:"sequence_number"`
		OutputIndex    *int   `json:"output_index"`
		ItemID         string `json:"item_id"`
		ContentIndex   *int   `json:"content_index"`
		Item           *struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"item"`
		Response *struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, fmt.Errorf("ssecheck: event is not JSON: %w: %s", err, data)
	}
	if ev.SequenceNumber == nil {
		return Event{}, fmt.Errorf("ssecheck: event %s has no sequence_number", ev.Type)
	}
	return Event{Data: bytes.Clone(data), Type: ev.Type, Seq: *ev.SequenceNumber, OutputIndex: ev.OutputIndex,
		ItemID: ev.ItemID, Item: ev.Item, ContentIndex: ev.ContentIndex, Response: ev.Response}, nil
}

func isTerminal(t string) bool {
	switch t {
	case "response.completed", "response.incomplete", "response.failed", "response.cancelled", "error":
		return true
	}
	return false
}

// Check validates every event against the schema and the stream invariants
// (a background response's stream has response.queued after
// response.created, and may end before response.in_progress when it is
// cancelled while queued).
func Check(v *schema.Validator, evs []Event) error {
	if len(evs) < 3 {
		return fmt.Errorf("ssecheck: only %d events", len(evs))
	}
	// A background stream has response.queued between the two.
	start := 2
	if evs[1].Type == "response.queued" {
		start = 3
	}
	if evs[0].Type != "response.created" || evs[start-1].Type != "response.in_progress" && !isTerminal(evs[start-1].Type) {
		return fmt.Errorf("ssecheck: stream starts with %s, %s", evs[0].Type, evs[1].Type)
	}
	nextIndex := 0
	open := map[int]string{} // output index → item id, while open
	parts := map[string]bool{}
	for i, ev := range evs {
		if v != nil {
			if err := v.ValidateEvent(ev.Data); err != nil {
				return fmt.Errorf("ssecheck: event %d (%s): %w", i, ev.Type, err)
			}
		}
		if ev.Name != "" && ev.Name != ev.Type {
			return fmt.Errorf("ssecheck: event %d: event field %q but type %q", i, ev.Name, ev.Type)
		}
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			return fmt.Errorf("ssecheck: event %d: sequence_number %d after %d", i, ev.Seq, evs[i-1].Seq)
		}
		if i >= start && (ev.Type == "response.created" || ev.Type == "response.in_progress" || ev.Type == "response.queued") {
			return fmt.Errorf("ssecheck: event %d: second %s", i, ev.Type)
		}
		if isTerminal(ev.Type) != (i == len(evs)-1) {
			return fmt.Errorf("ssecheck: event %d: %s (terminal events must be exactly the last one)", i, ev.Type)
		}
		switch ev.Type {
		case "response.output_item.added":
			if *ev.OutputIndex != nextIndex {
				return fmt.Errorf("ssecheck: event %d: item added at output_index %d, want %d", i, *ev.OutputIndex, nextIndex)
			}
			nextIndex++
			open[*ev.OutputIndex] = ev.Item.ID
		case "response.output_item.done":
			if open[*ev.OutputIndex] != ev.Item.ID {
				return fmt.Errorf("ssecheck: event %d: done for item %s at %d that is not open", i, ev.Item.ID, *ev.OutputIndex)
			}
			for k := range parts {
				if strings.HasPrefix(k, ev.Item.ID+"/") {
					return fmt.Errorf("ssecheck: event %d: item %s done with part %s still open", i, ev.Item.ID, k)
				}
			}
			delete(open, *ev.OutputIndex)
		case "response.content_part.added", "response.content_part.done":
			if open[*ev.OutputIndex] != ev.ItemID {
				return fmt.Errorf("ssecheck: event %d: %s for item %s that is not open", i, ev.Type, ev.ItemID)
			}
			key := fmt.Sprintf("%s/%d", ev.ItemID, *ev.ContentIndex)
			if ev.Type == "response.content_part.added" {
				parts[key] = true
			} else {
				if !parts[key] {
					return fmt.Errorf("ssecheck: event %d: part %s done but not added", i, key)
				}
				delete(parts, key)
			}
		default:
			if ev.OutputIndex != nil && ev.ItemID != "" {
				if open[*ev.OutputIndex] != ev.ItemID {
					return fmt.Errorf("ssecheck: event %d: %s for item %s that is not open", i, ev.Type, ev.ItemID)
				}
				if ev.ContentIndex != nil && !parts[fmt.Sprintf("%s/%d", ev.ItemID, *ev.ContentIndex)] {
					return fmt.Errorf("ssecheck: event %d: %s outside an open content part", i, ev.Type)
				}
			}
		}
	}
	if len(open) > 0 && evs[len(evs)-1].Type != "response.cancelled" && evs[len(evs)-1].Type != "response.failed" && evs[len(evs)-1].Type != "error" {
		return fmt.Errorf("ssecheck: items left open at the end: %v", open)
	}
	return nil
}

// OutputText joins the deltas of every response.output_text.delta event.
func OutputText(evs []Event) (string, error) {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type != "response.output_text.delta" {
			continue
		}
		var d struct {
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return "", fmt.Errorf("ssecheck: delta event: %w", err)
		}
		b.WriteString(d.Delta)
	}
	return b.String(), nil
}

// openAIToolTypes are the tool types of OpenAI's ToolUnion (openai-go).
var openAIToolTypes = map[string]bool{
	"function": true, "file_search": true, "computer": true, "computer_use_preview": true, "web_search": true,
	"web_search_2025_08_26": true, "mcp": true, "code_interpreter": true, "programmatic_tool_calling": true,
	"image_generation": true, "local_shell": true, "shell": true, "custom": true, "namespace": true,
	"tool_search": true, "web_search_preview": true, "web_search_preview_2025_03_11": true, "apply_patch": true,
}

// Missing returns the fields that openai-go marks required (api:"required")
// on v, a value of one of its response types, and that data, v's JSON
// object, lacks: what an SDK user finds unset where the SDK promises it.
func Missing(v any, data []byte) ([]string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, err
	}
	required, err := Required(v)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range required {
		if _, ok := keys[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// Required returns the JSON names of the fields openai-go marks required
// (api:"required") on v, a value of one of its response types, sorted.
func Required(v any) ([]string, error) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("ssecheck: %T is not an openai-go struct", v)
	}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if strings.Contains(f.Tag.Get("api"), "required") && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// checkRequired is Missing as an error naming what (an event, an item).
func checkRequired(what string, v any, data []byte) error {
	missing, err := Missing(v, data)
	if err != nil {
		return fmt.Errorf("ssecheck: %s: %w", what, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("ssecheck: %s lacks what openai-go's %T requires: %v", what, v, missing)
	}
	return nil
}

// CheckOpenAIResponse checks a response body against OpenAI's own types,
// through the official Go SDK: it decodes, holds every field the SDK
// requires, every output item is a type the SDK knows, with the fields it
// requires, every tool is one of OpenAI's tool types (an mcp tool with its
// server_label).
func CheckOpenAIResponse(data []byte) error {
	var r responses.Response
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("ssecheck: openai-go cannot decode the response: %w", err)
	}
	if err := checkRequired("the response", r, data); err != nil {
		return err
	}
	for i, it := range r.Output {
		if it.AsAny() == nil {
			return fmt.Errorf("ssecheck: output[%d]: openai-go does not know item type %q", i, it.Type)
		}
		if err := checkRequired(fmt.Sprintf("output[%d] (%s)", i, it.Type), it.AsAny(), []byte(it.RawJSON())); err != nil {
			return err
		}
	}
	for i, t := range r.Tools {
		if !openAIToolTypes[t.Type] {
			return fmt.Errorf("ssecheck: tools[%d]: %q is not an OpenAI tool type", i, t.Type)
		}
		if t.Type == "mcp" && t.AsMcp().ServerLabel == "" {
			return fmt.Errorf("ssecheck: tools[%d]: mcp tool without server_label", i)
		}
	}
	return nil
}

// CheckOpenAI checks every event against OpenAI's own types, through the
// official Go SDK: each decodes as an event type the SDK knows, its item
// (if any) is an item type the SDK knows, and its response (if any) passes
// CheckOpenAIResponse. response.cancelled, Lambent's extension, is checked
// as response.completed.
func CheckOpenAI(evs []Event) error {
	for i, ev := range evs {
		data := ev.Data
		if ev.Type == "response.cancelled" {
			data = bytes.Replace(data, []byte(`"response.cancelled"`), []byte(`"response.completed"`), 1)
		}
		var u responses.ResponseStreamEventUnion
		if err := json.Unmarshal(data, &u); err != nil {
			return fmt.Errorf("ssecheck: event %d (%s): openai-go cannot decode it: %w", i, ev.Type, err)
		}
		if u.AsAny() == nil {
			return fmt.Errorf("ssecheck: event %d: openai-go does not know event type %q", i, ev.Type)
		}
		if err := checkRequired(fmt.Sprintf("event %d (%s)", i, ev.Type), u.AsAny(), data); err != nil {
			return err
		}
		var body struct {
			Item     json.RawMessage `json:"item"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(data, &body); err != nil {
			return err
		}
		if len(body.Item) > 0 {
			var it responses.ResponseOutputItemUnion
			if err := json.Unmarshal(body.Item, &it); err != nil || it.AsAny() == nil {
				return fmt.Errorf("ssecheck: event %d (%s): openai-go does not know its item %s (%v)", i, ev.Type, body.Item, err)
			}
			if err := checkRequired(fmt.Sprintf("event %d (%s)'s item", i, ev.Type), it.AsAny(), body.Item); err != nil {
				return err
			}
		}
		if len(body.Response) > 0 {
			if err := CheckOpenAIResponse(body.Response); err != nil {
				return fmt.Errorf("ssecheck: event %d (%s): %w", i, ev.Type, err)
			}
		}
	}
	return nil
}
