// Package textsplit splits a scripted model answer into stream deltas the
// way real models send them, for the fake model backends (fakellm,
// fakebedrock). Pieces never split a UTF-8 sequence and concatenate back to
// the whole text.
package textsplit

import (
	"iter"
	"unicode/utf8"
)

// words yields s split per word: each piece is a run of ASCII white space
// followed by a run of anything else, so pieces never split a UTF-8
// sequence and concatenate back to s.
func words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			i := 0
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			for i < len(s) && !isSpace(s[i]) {
				i++
			}
			if !yield(s[:i]) {
				return
			}
			s = s[i:]
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// pieces yields s split into pieces of about size bytes, each extended to
// the next UTF-8 sequence start so no sequence is split.
func pieces(s string, size int) iter.Seq[string] {
	size = max(size, 1)
	return func(yield func(string) bool) {
		for len(s) > 0 {
			i := min(size, len(s))
			for i < len(s) && !utf8.RuneStart(s[i]) {
				i++
			}
			if !yield(s[:i]) {
				return
			}
			s = s[i:]
		}
	}
}

// Split yields the deltas of a text: about n pieces, or per word when n <= 0.
func Split(s string, n int) iter.Seq[string] {
	if n <= 0 {
		return words(s)
	}
	return pieces(s, (len(s)+n-1)/n)
}

// argumentPieceSize is the default size of tool call argument deltas.
const argumentPieceSize = 8

// Arguments yields the deltas of tool call arguments: about n pieces, or
// pieces of argumentPieceSize bytes when n <= 0.
func Arguments(s string, n int) iter.Seq[string] {
	if n <= 0 {
		return pieces(s, argumentPieceSize)
	}
	return pieces(s, (len(s)+n-1)/n)
}
