package api

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeCreateRequest: any body either decodes into a valid request
// that re-validates and marshals, or fails with a 4xx *Error; never a panic.
func FuzzDecodeCreateRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hello"}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"previous_response_id":"resp_1"}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"lambent:calculator"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`,
		`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"metadata":{"a":"b"}}`,
		`{"input":[{"role":"user","content":"x"},{"type":"compaction","id":"cmp_1","encrypted_content":"k.AAAA"}]}`,
		`{"input":42}`, `{"input":"x","tools":{}}`, `[]`, `null`, `{"input":[{"type":"nope"}]}`, `{"input":"x","tool_choice":{"type":"function"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeCreateRequest(body)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("error is not a 4xx *Error: %#v", err)
			}
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("decoded request does not validate: %v", err)
		}
		if _, err := json.Marshal(req.Input); err != nil {
			t.Fatalf("decoded input does not marshal: %v", err)
		}
		if len(req.Input) == 0 && req.PreviousResponseID == "" {
			t.Fatalf("empty input accepted")
		}
	})
}
