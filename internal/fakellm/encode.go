package fakellm

import (
	"encoding/json"
	"iter"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// appendString appends s as a JSON string, escaped by encoding/json.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendNullableString appends s as a JSON string, or null when s is empty.
func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendUsage appends the Chat Completions usage object.
func appendUsage(b []byte, u Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens()), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CachedTokens), 10)
	b = append(b, `,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(u.ReasoningTokens), 10)
	return append(b, `,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
}

// appendError appends an OpenAI error body {"error":{...}} and a newline.
// Empty param and code are sent as null.
func appendError(b []byte, message, typ, param, code string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, message)
	b = append(b, `,"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, code)
	return append(b, "}}\n"...)
}

// errorKind returns the error type and code OpenAI uses for an HTTP status.
func errorKind(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	default:
		return "invalid_request_error", ""
	}
}

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

// split yields the deltas of a text: about n pieces, or per word when n <= 0.
func split(s string, n int) iter.Seq[string] {
	if n <= 0 {
		return words(s)
	}
	return pieces(s, (len(s)+n-1)/n)
}

// argumentPieceSize is the default size of tool call argument deltas.
const argumentPieceSize = 8

// splitArguments yields the deltas of tool call arguments: about n pieces,
// or pieces of argumentPieceSize bytes when n <= 0.
func splitArguments(s string, n int) iter.Seq[string] {
	if n <= 0 {
		return pieces(s, argumentPieceSize)
	}
	return pieces(s, (len(s)+n-1)/n)
}
