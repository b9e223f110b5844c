// Package textcut cuts text to a byte budget without splitting a UTF-8
// sequence: the one implementation behind every bounded message, log
// attribute, error snippet and tool output of the gateway.
package textcut

import "unicode/utf8"

// Prefix is the longest prefix of s of at most n bytes that splits no
// UTF-8 sequence (s itself when it fits; "" when n <= 0). A byte that
// starts no valid sequence is a character of its own, so a run of them is
// cut at n, not backed off from.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	// The sequence that byte n may be inside starts at most
	// utf8.UTFMax-1 bytes before it.
	for i := n - 1; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if _, size := utf8.DecodeRuneInString(s[i:]); i+size > n {
				return s[:i]
			}
			break
		}
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
