package egress

import "testing"

func TestShownURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://h.example/hook":                   "https://h.example/hook",
		"https://h.example/hook?token=s3cret":      "https://h.example/hook?…",
		"https://h.example/hook#s3cret":            "https://h.example/hook",
		"https://s3cret@h.example/hook":            "https://xxxxx@h.example/hook",
		"https://u:s3cret@h.example:8443/v1?k=s3c": "https://xxxxx@h.example:8443/v1?…",
		"http://[::1/hook?token=s3cret":            "http://[::1/hook?…",
		"http://u:s3cret@[::1/hook":                "…@[::1/hook",
		// No authority (a missing "//"): masked as text is, where
		// url.URL.String shows an opaque part or a path whole.
		"u:s3cret@h.example/hook":         "…@h.example/hook",
		"https//u:s3cret@h.example/hook":  "…@h.example/hook",
		"https:u:s3cret@h.example/h?k=s3": "…@h.example/h?…",
		"s3cret@h.example":                "…@h.example",
		"h.example/hook?token=s3cret":     "h.example/hook?…",
	} {
		if got := ShownURL(raw); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
