package api

import (
	"errors"
	"strings"
	"testing"
)

func TestArrayLen(t *testing.T) {
	for in, want := range map[string]int{
		`[]`: 0, `[ ]`: 0, `[1]`: 1, `[1,2]`: 2, `["a,b",{"c":[1,2]}]`: 2, `[ "x\",y" , 3 ]`: 2, "[\n]": 0, `[[],[]]`: 2, `[{}]`: 1,
	} {
		if got := arrayLen([]byte(in)); got != want {
			t.Errorf("arrayLen(%s) = %d, want %d", in, got, want)
		}
	}
}

// A request's input holds at most MaxInputItems items, counted before any
// is built (an 8 MB body of minimal items took ~900 MB to decode); user,
// forwarded to the provider, at most 128 bytes.
func TestInputItemsAndUserBounded(t *testing.T) {
	item := `{"role":"user","content":"a"}`
	body := `{"input":[` + strings.Repeat(item+",", MaxInputItems) + item + `]}`
	_, err := DecodeCreateRequest([]byte(body))
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" || ae.Param != "input" {
		t.Fatalf("%d input items: %v, want a 400 limit_exceeded of input", MaxInputItems+1, err)
	}
	body = `{"input":[` + strings.Repeat(item+",", MaxInputItems-1) + item + `]}`
	if _, err := DecodeCreateRequest([]byte(body)); err != nil {
		t.Fatalf("%d input items: %v", MaxInputItems, err)
	}
	_, err = DecodeCreateRequest([]byte(`{"input":"hi","user":"` + strings.Repeat("u", 129) + `"}`))
	if !errors.As(err, &ae) || ae.Param != "user" {
		t.Fatalf("a 129-byte user: %v, want a 400 of user", err)
	}
}

// An mcp_call replayed in input keeps its id: the call id the model sees
// derives from it, so without one the same history would reach the model
// differently on every request (a prompt cache broken from there).
func TestInputMCPCallNeedsItsID(t *testing.T) {
	_, err := DecodeCreateRequest([]byte(`{"input":[{"type":"message","role":"user","content":"go"},
		{"type":"mcp_call","server_label":"docs","name":"search","arguments":"{}","output":"found","status":"completed"}]}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != "input[1].id" {
		t.Fatalf("an mcp_call without id: %v, want a 400 of input[1].id", err)
	}
}
