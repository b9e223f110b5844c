// Package textcut cuts text to a byte budget without splitting a UTF-8
// sequence: the one implementation behind every bounded message, log
// attribute, error snippet and tool output of the gateway.
package textcut

import "unicode/utf8"

// Prefix is the longest prefix of s of at most n bytes that ends at the
// start of a character (s itself when it fits; "" when n <= 0).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Ellipsis is s when it has at most n bytes, else its Prefix of n bytes
// followed by "…".
func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "…"
}
