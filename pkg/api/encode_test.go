package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAppendJSONMatchesLegacy: for every corpus value, AppendJSON writes
// exactly what json.Marshal wrote with the old reflection-based shapes,
// appends to what is in the buffer, and json.Marshal (through the new
// MarshalJSON methods) agrees too.
func TestAppendJSONMatchesLegacy(t *testing.T) {
	cases := encodeCorpus()
	if len(cases) < 400 {
		t.Fatalf("corpus has only %d cases", len(cases))
	}
	for _, c := range cases {
		want, wantErr := json.Marshal(legacy(c.v))
		gotM, gotErr := json.Marshal(c.v)
		got := appendJSONOf([]byte("prefix"), c.v)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Errorf("%s: AppendJSON overwrote the buffer: %q", c.name, got)
			continue
		}
		got = got[len("prefix"):]
		if !json.Valid(got) {
			t.Errorf("%s: AppendJSON wrote invalid JSON: %s", c.name, got)
		}
		if bytes.ContainsAny(got, "\n\r") {
			t.Errorf("%s: AppendJSON wrote a line break: %q", c.name, got)
		}
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%s: json.Marshal error %v, legacy error %v", c.name, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			if !strings.HasPrefix(c.name, "unencodable/") {
				t.Errorf("%s: legacy encoding failed: %v", c.name, wantErr)
			}
			continue
		}
		if strings.HasPrefix(c.name, "unencodable/") {
			t.Errorf("%s: legacy encoding did not fail", c.name)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: AppendJSON differs\n got: %s\nwant: %s", c.name, got, want)
		}
		if !bytes.Equal(gotM, want) {
			t.Errorf("%s: json.Marshal differs\n got: %s\nwant: %s", c.name, gotM, want)
		}
	}
}

// TestMarshalJSONMethods: the MarshalJSON methods return AppendJSON's
// bytes, and fail where the old ones failed.
func TestMarshalJSONMethods(t *testing.T) {
	r := corpusResponses()[2]
	b, err := r.MarshalJSON()
	if err != nil || !bytes.Equal(b, r.AppendJSON(nil)) {
		t.Fatalf("Response.MarshalJSON = %s, %v", b, err)
	}
	bad := Item{Type: "bogus"}
	if _, err := bad.MarshalJSON(); err == nil || !strings.Contains(err.Error(), `cannot marshal item of type "bogus"`) {
		t.Errorf("Item.MarshalJSON of an unknown type: %v", err)
	}
	if got := string(bad.AppendJSON(nil)); got != "null" {
		t.Errorf("Item.AppendJSON of an unknown type = %s", got)
	}
	if _, err := (&Response{Temperature: math.NaN()}).MarshalJSON(); err == nil {
		t.Error("Response.MarshalJSON of a NaN did not fail")
	}
	if _, err := (Tool{Type: ToolFunction, Parameters: json.RawMessage("{")}).MarshalJSON(); err == nil {
		t.Error("Tool.MarshalJSON of invalid parameters did not fail")
	}
	for _, v := range []interface{ AppendJSON([]byte) []byte }{(*Response)(nil), (*Error)(nil), (*Usage)(nil), (*StreamEvent)(nil),
		(*ItemList)(nil), (*DeleteResult)(nil), (*ErrorBody)(nil), (*Item)(nil), (*ContentPart)(nil), (*Tool)(nil), (*ToolChoice)(nil),
		(*TextConfig)(nil), (*TextFormat)(nil)} {
		if got := string(v.AppendJSON([]byte("x"))); got != "xnull" {
			t.Errorf("%T(nil).AppendJSON = %s", v, got)
		}
	}
}

// TestAppendJSONRoundTrip: a response decodes back to the same values.
func TestAppendJSONRoundTrip(t *testing.T) {
	r := benchResponse()
	var m map[string]any
	if err := json.Unmarshal(r.AppendJSON(nil), &m); err != nil {
		t.Fatal(err)
	}
	out := m["output"].([]any)[0].(map[string]any)
	text := out["content"].([]any)[0].(map[string]any)["text"]
	if m["id"] != r.ID || m["top_p"] != 1.0 || m["metadata"] == nil || text != r.Output[0].Content[0].Text {
		t.Fatalf("round trip: %v", m)
	}
}

func TestAppendFloat(t *testing.T) {
	fs := append([]float64{}, corpusFloats...)
	for e := -30; e <= 30; e++ {
		f := math.Pow(10, float64(e))
		fs = append(fs, f, -f, f*1.5, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
	}
	for _, f := range fs {
		want, _ := json.Marshal(f)
		var err error
		if got := appendFloat(nil, f, &err); !bytes.Equal(got, want) || err != nil {
			t.Errorf("appendFloat(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		var err error
		if got := appendFloat(nil, f, &err); string(got) != "null" || err == nil {
			t.Errorf("appendFloat(%v) = %s, %v", f, got, err)
		}
	}
}

func TestAppendRaw(t *testing.T) {
	for _, raw := range corpusRaw {
		want, wantErr := json.Marshal(raw)
		var err error
		got := appendRaw(nil, raw, &err)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Errorf("appendRaw(%q) = %s, %v; want %s, %v", raw, got, err, want, wantErr)
		}
	}
}

// FuzzAppendString: strings are escaped exactly like encoding/json, and
// valid UTF-8 decodes back to itself.
func FuzzAppendString(f *testing.F) {
	for _, s := range corpusStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString([]byte("x"), s)[1:]
		want, _ := json.Marshal(s)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s; json.Marshal = %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendString(%q) = %s does not decode: %v", s, got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("appendString(%q) decodes to %q", s, back)
		}
		if !utf8.ValidString(s) && back != strings.ToValidUTF8(back, "\ufffd") {
			t.Fatalf("appendString(%q) decodes to invalid UTF-8 %q", s, back)
		}
	})
}

// FuzzAppendItem: an output message and a function call with arbitrary
// text encode like the old shapes.
func FuzzAppendItem(f *testing.F) {
	for _, s := range corpusStrings {
		f.Add(s, `{"a":1}`)
	}
	f.Fuzz(func(t *testing.T, text, args string) {
		for _, it := range []Item{
			{Type: ItemMessage, ID: text, Status: ItemCompleted, Role: RoleAssistant, Content: []ContentPart{{Type: PartOutputText, Text: text}}},
			{Type: ItemFunctionCall, ID: "fc", CallID: args, Name: text, Arguments: args},
		} {
			got := it.AppendJSON(nil)
			want, err := json.Marshal(legacyItem(it))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("AppendJSON = %s; legacy %s, %v", got, want, err)
			}
		}
	})
}

// FuzzAppendRaw: raw JSON is compacted and escaped like encoding/json
// writes a json.RawMessage, and invalid raw JSON fails the same way.
func FuzzAppendRaw(f *testing.F) {
	for _, raw := range corpusRaw {
		f.Add([]byte(raw))
	}
	f.Add([]byte(`{"a" :[1, {"b":"<\u2028>"}], "c\"" : "\\"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var err error
		got := appendRaw(nil, raw, &err)
		want, wantErr := json.Marshal(json.RawMessage(raw))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("appendRaw(%q) error %v; json.Marshal error %v", raw, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendRaw(%q) = %s; json.Marshal = %s", raw, got, want)
		}
	})
}

// FuzzAppendFloat: floats are formatted like encoding/json.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range corpusFloats {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		var err error
		got := appendFloat(nil, v, &err)
		want, wantErr := json.Marshal(v)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("appendFloat(%v) = %s, %v; json.Marshal = %s, %v", v, got, err, want, wantErr)
		}
	})
}
