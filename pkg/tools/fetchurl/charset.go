package fetchurl

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Character sets. fetch_url decodes UTF-8, UTF-16 (by BOM or label),
// ISO-8859-1 and windows-1252 (the HTML default for undeclared non-UTF-8
// pages), which covers nearly every page on the web; other labels are read
// as UTF-8 with invalid bytes replaced. A full charset table (as in
// golang.org/x/net/html/charset) would add about 0.7 MB to every binary
// that links the built-in tools, the gateway's included.

// metaCharset returns the charset a <meta charset> or <meta
// http-equiv="content-type" content="…; charset=…"> tag of head declares
// ("" when none), reading it with the HTML tokenizer the page is parsed
// with.
func metaCharset(head []byte) string {
	z := html.NewTokenizer(bytes.NewReader(head))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			if string(name) != "meta" {
				continue
			}
			var charset, content string
			equiv := false
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				switch string(k) {
				case "charset":
					charset = string(v)
				case "content":
					content = string(v)
				case "http-equiv":
					equiv = strings.EqualFold(string(v), "content-type")
				}
			}
			if charset != "" {
				return strings.TrimSpace(charset)
			}
			if equiv {
				if _, params, err := mime.ParseMediaType(content); err == nil && params["charset"] != "" {
					return params["charset"]
				}
			}
		}
	}
}

// cp1252 maps bytes 0x80–0x9F of windows-1252; 0 marks an undefined byte
// (decoded as in ISO-8859-1, as browsers do).
var cp1252 = [32]rune{
	0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
	0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
}

// normalizeLabel maps a charset label to one of "utf-8", "utf-16le",
// "utf-16be", "windows-1252", or "" when unknown.
func normalizeLabel(label string) string {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "utf-8", "utf8", "unicode-1-1-utf-8", "us-ascii", "ascii":
		return "utf-8"
	case "utf-16le", "utf-16":
		return "utf-16le"
	case "utf-16be":
		return "utf-16be"
	case "iso-8859-1", "iso8859-1", "latin1", "l1", "iso_8859-1", "cp819", "windows-1252", "cp1252", "x-cp1252", "iso-8859-15", "latin-9":
		return "windows-1252"
	}
	return ""
}

// bomCharset reads a byte order mark.
func bomCharset(body []byte) (string, int) {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return "utf-8", 3
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		return "utf-16le", 2
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		return "utf-16be", 2
	}
	return "", 0
}

// decodeBytes converts body in the normalized charset cs to valid UTF-8.
func decodeBytes(body []byte, cs string) string {
	switch cs {
	case "utf-16le", "utf-16be":
		u := make([]uint16, len(body)/2)
		for i := range u {
			if cs == "utf-16le" {
				u[i] = uint16(body[2*i]) | uint16(body[2*i+1])<<8
			} else {
				u[i] = uint16(body[2*i])<<8 | uint16(body[2*i+1])
			}
		}
		return string(utf16.Decode(u))
	case "windows-1252":
		var b strings.Builder
		b.Grow(len(body) + len(body)/4)
		for _, c := range body {
			switch {
			case c < 0x80:
				b.WriteByte(c)
			case c < 0xA0 && cp1252[c-0x80] != 0:
				b.WriteRune(cp1252[c-0x80])
			default:
				b.WriteRune(rune(c))
			}
		}
		return b.String()
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// decodeHTML converts an HTML body to UTF-8 using the BOM, the declared
// charset or a <meta> tag; without any of them valid UTF-8 is kept, and
// anything else is read as windows-1252, the HTML default.
func decodeHTML(body []byte, contentType string) string {
	if cs, n := bomCharset(body); cs != "" {
		return decodeBytes(body[n:], cs)
	}
	label := ""
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		label = params["charset"]
	}
	if label == "" {
		head := body
		if len(head) > 1024 {
			head = head[:1024]
		}
		label = metaCharset(head)
	}
	cs := normalizeLabel(label)
	if cs == "" || cs == "utf-16le" || cs == "utf-16be" {
		// A page that reached here without a BOM is ASCII-compatible; a
		// UTF-16 label in a <meta> is a known mistake browsers ignore.
		cs = "utf-8"
		if label == "" && !utf8.Valid(body) {
			cs = "windows-1252"
		}
	}
	return decodeBytes(body, cs)
}

// decodeText converts a text body to UTF-8 using its BOM or declared charset.
func decodeText(body []byte, label string) string {
	cs, n := bomCharset(body)
	if cs == "" {
		cs = normalizeLabel(label)
	}
	s := strings.ReplaceAll(decodeBytes(body[n:], cs), "\r\n", "\n")
	return strings.TrimSpace(s)
}
