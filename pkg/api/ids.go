package api

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// ID prefixes.
const (
	PrefixResponse     = "resp_"
	PrefixMessage      = "msg_"
	PrefixFunctionCall = "fc_"
	PrefixFuncOutput   = "fco_"
	PrefixReasoning    = "rs_"
	PrefixCompaction   = "cmp_"
)

// MaxResponseIDLen bounds the length of a response id, generated or chosen
// by the caller of a background event.
const MaxResponseIDLen = 128

// itemSuffixLen is the number of random hex characters that end an item id.
const itemSuffixLen = 12

// NewID returns prefix followed by 48 hex characters: 16 of the creation time
// in nanoseconds (so IDs sort by time) and 32 of crypto randomness.
func NewID(prefix string) string {
	var raw [24]byte
	n := uint64(time.Now().UnixNano())
	for i := 7; i >= 0; i-- {
		raw[i] = byte(n)
		n >>= 8
	}
	_, _ = rand.Read(raw[8:])
	var hx [2 * len(raw)]byte
	hex.Encode(hx[:], raw[:])
	var b strings.Builder
	b.Grow(len(prefix) + len(hx))
	b.WriteString(prefix)
	b.Write(hx[:])
	return b.String()
}

// NewCallID returns a new tool call id for a call the model made without
// one, or the gateway made itself: "call_" and 24 random base-62
// characters, within every provider's bound (40 characters for OpenAI's
// Chat Completions, 64 of [A-Za-z0-9_-] for Bedrock).
func NewCallID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var raw [24]byte
	_, _ = rand.Read(raw[:])
	var b strings.Builder
	b.Grow(5 + len(raw))
	b.WriteString("call_")
	for _, c := range raw {
		b.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return b.String()
}

// NewItemID returns a new id for an item of response responseID (a
// well-formed response id): prefix, the response id without its "resp_",
// "_" and 12 random hex characters. The id is opaque to clients; the
// gateway reads the response back from it (ResponseIDOf), so that an
// item_reference is resolved with one read of that response.
func NewItemID(prefix, responseID string) string {
	var raw [itemSuffixLen / 2]byte
	_, _ = rand.Read(raw[:])
	var hx [itemSuffixLen]byte
	hex.Encode(hx[:], raw[:])
	body := strings.TrimPrefix(responseID, PrefixResponse)
	var b strings.Builder
	b.Grow(len(prefix) + len(body) + 1 + len(hx))
	b.WriteString(prefix)
	b.WriteString(body)
	b.WriteByte('_')
	b.Write(hx[:])
	return b.String()
}

// ResponseIDOf returns the id of the response an item id made by NewItemID
// belongs to. It reports false for ids of other forms: those of older
// gateway versions (prefix and 48 hex characters) and ids chosen by clients
// that do not carry a well-formed response id.
func ResponseIDOf(itemID string) (string, bool) {
	_, rest, ok := strings.Cut(itemID, "_")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || len(rest)-i-1 != itemSuffixLen || !isHex(rest[i+1:]) {
		return "", false
	}
	id := PrefixResponse + rest[:i]
	if !ValidResponseID(id) {
		return "", false
	}
	return id, true
}

// ValidResponseID reports whether id is a well-formed response id:
// "resp_" followed by letters, digits, '_' or '-', at most MaxResponseIDLen
// characters in all. Generated ids ("resp_" and 48 hex characters) and ids
// chosen by the caller of a background event both have this form.
func ValidResponseID(id string) bool {
	return validPrefixedID(id, PrefixResponse, MaxResponseIDLen)
}

// validPrefixedID reports whether id is prefix followed by one or more
// letters, digits, '_' or '-', at most max characters in all.
func validPrefixedID(id, prefix string, max int) bool {
	body, ok := strings.CutPrefix(id, prefix)
	if !ok || body == "" || len(id) > max {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ItemIDPrefix is the prefix of the ids of items of type typ (messages and
// unknown types: PrefixMessage).
func ItemIDPrefix(typ string) string {
	switch typ {
	case ItemFunctionCall:
		return PrefixFunctionCall
	case ItemFunctionCallOutput:
		return PrefixFuncOutput
	case ItemCustomToolCall:
		return PrefixCustomToolCall
	case ItemCustomToolCallOutput:
		return PrefixCustomToolCallOutput
	case ItemShellCall:
		return PrefixShellCall
	case ItemShellCallOutput:
		return PrefixShellCallOutput
	case ItemApplyPatchCall:
		return PrefixApplyPatchCall
	case ItemApplyPatchCallOutput:
		return PrefixApplyPatchCallOutput
	case ItemLocalShellCall:
		return PrefixLocalShellCall
	case ItemLocalShellCallOutput:
		return PrefixLocalShellCallOutput
	case ItemComputerCall:
		return PrefixComputerCall
	case ItemComputerCallOutput:
		return PrefixComputerCallOutput
	case ItemWebSearchCall:
		return PrefixWebSearchCall
	case ItemToolSearchCall:
		return PrefixToolSearchCall
	case ItemToolSearchOutput:
		return PrefixToolSearchOutput
	case ItemMCPCall:
		return PrefixMCPCall
	case ItemReasoning:
		return PrefixReasoning
	case ItemCompaction:
		return PrefixCompaction
	case ItemMCPListTools:
		return PrefixMCPListTools
	case ItemMCPApprovalRequest:
		return PrefixMCPApprovalRequest
	case ItemMCPApprovalResponse:
		return PrefixMCPApprovalResponse
	}
	return PrefixMessage
}

// MaxItemIDLen bounds the length of an item id that reaches a store (a
// pagination cursor, a conversation item's id).
const MaxItemIDLen = 256

// ValidItemID reports whether id can be an item id: 1 to MaxItemIDLen
// printable ASCII characters, no space.
func ValidItemID(id string) bool {
	if id == "" || len(id) > MaxItemIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
