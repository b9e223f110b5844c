package textsplit

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want []string
	}{
		{"", 0, nil},
		{"one", 0, []string{"one"}},
		{"Hello world,  how\nare", 0, []string{"Hello", " world,", "  how", "\nare"}},
		{" lead trail ", 0, []string{" lead", " trail", " "}},
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"ab", 5, []string{"a", "b"}},
		{"日本語", 2, []string{"日本", "語"}}, // 9 bytes, pieces of 5 extended to rune starts
		{"whole", 1, []string{"whole"}},
	} {
		got := slices.Collect(Split(tc.s, tc.n))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	args := `{"city":"Zürich","note":"✓✓✓"}`
	var b strings.Builder
	n := 0
	for p := range Arguments(args, 0) {
		if !utf8.ValidString(p) || p == "" {
			t.Errorf("bad piece %q", p)
		}
		b.WriteString(p)
		n++
	}
	if b.String() != args || n < 3 {
		t.Errorf("Arguments: %d pieces, joined %q", n, b.String())
	}
}
