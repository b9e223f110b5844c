package egress

import (
	"errors"
	"net/url"
	"strings"
)

// ShownURL is the URL raw as errors and logs may show it: its user
// information masked whole (xxxxx@: a user name alone may be a token), its
// query replaced by "…" (it may hold a key), its fragment dropped. A URL
// that does not parse, or has no authority (no host: "u:key@host" or
// "https//u:key@host" parse as a scheme's opaque part or a path, which
// url.URL.String shows whole), is cut before its query or fragment, and
// what comes before its last "@" masked.
func ShownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return shownUnparsed(raw)
	}
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	if u.RawQuery != "" {
		c.RawQuery = "…"
	}
	if u.User != nil {
		c.User = url.User("xxxxx")
	}
	return c.String()
}

// ShownURLError returns err with the URL its *url.Error quotes (net/http's
// error of a request: "Post \"<url>\": …", with only a password masked)
// shown as ShownURL shows it. The *url.Error is changed in place.
func ShownURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		ue.URL = ShownURL(ue.URL)
	}
	return err
}

// shownUnparsed is ShownURL of raw taken as text: cut before its query or
// fragment, what comes before its last "@" masked.
func shownUnparsed(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i] + "?…"
	}
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		raw = "…" + raw[at:]
	}
	return raw
}
