package wirejson

import (
	"bytes"
	"encoding/json"
	"math"
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
	}
	for _, v := range []any{math.NaN(), math.Inf(1), json.RawMessage("{"), func() {}} {
		if _, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%#v) did not fail", v)
		}
	}
}
