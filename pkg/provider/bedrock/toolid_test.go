package bedrock

import (
	"strings"
	"testing"
)

// Call ids Bedrock refuses (Lambent's mcp_call item ids are 65 characters;
// other providers' ids may hold any character) map to a valid id, the same
// for a call and its result; valid ids pass unchanged.
func TestToolUseID(t *testing.T) {
	long := "mcp_" + strings.Repeat("a", 48) + "_" + strings.Repeat("b", 12)
	for _, id := range []string{long, "call.1", "call:x/y", strings.Repeat("z", 65)} {
		got := toolUseID(id)
		if got == id || len(got) > 64 || got != toolUseID(id) {
			t.Errorf("toolUseID(%q) = %q", id, got)
		}
		for _, c := range got {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				t.Errorf("toolUseID(%q) = %q: character %q", id, got, c)
			}
		}
	}
	if toolUseID(long) == toolUseID(long+"x") {
		t.Error("different ids map to the same toolUseId")
	}
	for _, id := range []string{"call_1", "tooluse_AbC-9", strings.Repeat("z", 64)} {
		if got := toolUseID(id); got != id {
			t.Errorf("toolUseID(%q) = %q, want it unchanged", id, got)
		}
	}
}
