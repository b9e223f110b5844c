package httpapi

import (
	"net/url"
	"strings"
	"testing"
)

// TestPlainPathNeedsNoEscaping checks resolve's shortcut: a path plainPath
// accepts is its own escaped form, segment by segment, and one it refuses
// has a byte that may need escaping or a dot segment.
func TestPlainPathNeedsNoEscaping(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/v1/responses", "/v1/responses/resp_0123abcDEF-9/input_items", "/", "/v1/conversations/conv_x/items/msg_y"} {
		if !plainPath(p) {
			t.Errorf("plainPath(%q) = false", p)
		}
		for _, s := range strings.Split(p, "/") {
			if url.PathEscape(s) != s || s == "." || s == ".." {
				t.Errorf("segment %q of plain path %q changes when escaped", s, p)
			}
		}
	}
	for c := range 256 {
		if s := string([]byte{byte(c)}); plainPath("/"+s) && s != "/" && url.PathEscape(s) != s {
			t.Errorf("plainPath accepts %q, which escapes to %q", s, url.PathEscape(s))
		}
	}
	for _, p := range []string{"/v1/responses/.", "/v1/responses/..", "/v1/a b", "/v1/résumé", "/v1/a%2Fb", "/v1/a;b", "/v1/a.b", "/v1/a~b", "/v1/a:b"} {
		if plainPath(p) {
			t.Errorf("plainPath(%q) = true", p)
		}
	}
}
