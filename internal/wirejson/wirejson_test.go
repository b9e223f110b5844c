package wirejson

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestMatchesEncodingJSON: Marshal writes json.Marshal's bytes on the
// cases where encoders differ most (escaping, invalid UTF-8, float
// formatting, map key order, raw JSON) and fails where it fails.
func TestMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", `q"b\s/`, "\n\r\t\b\f\x00\x1f\x7f", "<b>&amp;</b>", "é ✓ 😀", "sep\u2028line\u2029", "bad \xff\xfe \xe2\x80 \xed\xa0\x80"}
	floats := []float64{0, 1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1)}
	vals := []any{
		strs, floats,
		map[string]string{"b": "1", "a": "<", "c": "\u2028"},
		struct {
			S   string          `json:"s,omitempty"`
			P   *int            `json:"p"`
			Raw json.RawMessage `json:"raw"`
			Any any             `json:"any,omitempty"`
			Emb []any           `json:"emb"`
		}{Raw: json.RawMessage("{ \"a\" : [1, \"<&>\"] }"), Emb: []any{nil, 1.5, "x"}},
		json.RawMessage(`"\u003c"`),
	}
	for _, v := range vals {
		got, err := Marshal(v)
		want, wantErr := json.Marshal(v)
		if err != nil || wantErr != nil || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%#v) = %s, %v\njson.Marshal = %s, %v", v, got, err, want, wantErr)
		}
		if got, err := Append([]byte("x"), v); err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("Append(%#v) = %s, %v\nwant x%s", v, got, err, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), json.RawMessage("{"), func() {}} {
		if _, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%#v) did not fail", v)
		}
	}
}

// TestUnmarshalMatchesEncodingJSON: Unmarshal gives json.Unmarshal's
// values where decoders differ most (escapes, surrogates, invalid UTF-8,
// key case, duplicate keys, numbers, nulls, raw JSON) and fails where it
// fails.
func TestUnmarshalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	type inner struct {
		Text string `json:"text"`
	}
	type value struct {
		S   string          `json:"s"`
		P   *string         `json:"p"`
		N   int             `json:"n"`
		F   float64         `json:"f"`
		Raw json.RawMessage `json:"raw"`
		In  *inner          `json:"in,omitempty"`
		L   []inner         `json:"l"`
		M   map[string]any  `json:"m"`
	}
	ok := []string{
		`{"s":"q\"b\\s\/ \u00e9 \ud83d\ude00 \u2028"}`,
		`{"s":"lone \ud800 surrogate \udc00"}`,
		"{\"s\":\"bad \xff\xfe \xe2\x80 utf-8\"}",
		`{"S":"upper","P":"key case"}`,
		`{"s":"first","s":"last"}`,
		`{"n":-12,"f":1e-7,"p":null,"raw":null,"in":null}`,
		`{"raw":{ "a" : [1, "<&>"] },"l":[{"text":"a"},{"text":"b","x":1}],"m":{"k":[true,null,1.5]}}`,
		` {"unknown":{"deep":[[[]]]},"s":""} `,
		`{"s":"12345678901234567890123","f":210000000000000000000,"n":9223372036854775807}`,
	}
	bad := []string{``, `{`, `{"s":1}`, `{"n":1.5}`, `{"n":99999999999999999999}`, `{"n":21000000000000000000}`, `{"n":-21000000000000000000}`, `{"s":"x"} x`, `{"s":"x",}`, `[1]`, `{"l":{}}`, "{\"s\":\"ctl \x01\"}"}
	for _, in := range ok {
		var got, want value
		err, wantErr := Unmarshal([]byte(in), &got), json.Unmarshal([]byte(in), &want)
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Unmarshal(%q) = %+v, %v\njson.Unmarshal = %+v, %v", in, got, err, want, wantErr)
		}
	}
	for _, in := range bad {
		var got, want value
		if err, wantErr := Unmarshal([]byte(in), &got), json.Unmarshal([]byte(in), &want); err == nil || wantErr == nil {
			t.Errorf("Unmarshal(%q): err %v, json.Unmarshal err %v; want both to fail", in, err, wantErr)
		}
	}
}

// TestLongDigitRun: runs of 20 digits are found wherever they are, runs of
// 19 are not, however the runs fall against the scan's strides.
func TestLongDigitRun(t *testing.T) {
	t.Parallel()
	run := func(n int) string { return strings.Repeat("7", n) }
	for pad := range 45 {
		for _, c := range []struct {
			s    string
			want bool
		}{
			{run(20), true}, {run(19), false}, {run(19) + "," + run(19), false}, {run(5) + "x" + run(20), true},
			{run(30), true}, {run(19) + "-" + run(20), true}, {run(10) + "." + run(10), false},
		} {
			in := strings.Repeat(" ", pad) + c.s + strings.Repeat("}", pad%7)
			if got := longDigitRun([]byte(in)); got != c.want {
				t.Errorf("longDigitRun(%q) = %v, want %v", in, got, c.want)
			}
		}
	}
}

// SplitArray gives an array's elements as texts that alias it; null has
// none; what is not one array is an error.
func TestSplitArray(t *testing.T) {
	data := []byte(` [ {"a":[1,2]} , "x\"]" ,3 ] `)
	elems, err := SplitArray(data)
	if err != nil || len(elems) != 3 || string(elems[0]) != `{"a":[1,2]}` || string(elems[1]) != `"x\"]"` || string(elems[2]) != "3" {
		t.Fatalf("got %q, %v", elems, err)
	}
	if &elems[0][0] != &data[3] {
		t.Error("the elements are copies")
	}
	if elems, err := SplitArray([]byte("null")); err != nil || elems != nil {
		t.Errorf("null: %q, %v", elems, err)
	}
	for _, bad := range []string{`[1,]`, `[1] 2`, `{"a":1}`, `[`} {
		if _, err := SplitArray([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
