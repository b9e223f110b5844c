package bounded

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, c := range []struct {
		in    string
		size  int64
		limit int64
		want  string
		over  bool
	}{
		{"", 0, 4, "", false},
		{"abc", 0, 4, "abc", false},
		{"abcd", 0, 4, "abcd", false},
		{"abcd", 4, 4, "abcd", false},
		{"abcde", 0, 4, "abcd", true},
		{"abcde", 5, 4, "abcd", true},
		{"abcde", 2, 4, "abcd", true}, // an announced size that lies
		{"a", 0, 0, "", true},
		{"", 0, 0, "", false},
	} {
		r := strings.NewReader(c.in)
		got, over, err := Read(r, c.size, c.limit)
		if err != nil || string(got) != c.want || over != c.over {
			t.Errorf("Read(%q, %d, %d) = %q, %v, %v; want %q, %v", c.in, c.size, c.limit, got, over, err, c.want, c.over)
		}
		if consumed := int64(len(c.in) - r.Len()); over && consumed != c.limit+1 {
			t.Errorf("Read(%q, %d, %d) consumed %d bytes, want limit+1", c.in, c.size, c.limit, consumed)
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	got, over, err := Read(io.MultiReader(strings.NewReader("ab"), iotestErr{boom}), 0, 10)
	if !errors.Is(err, boom) || got != nil || over {
		t.Fatalf("Read = %q, %v, %v; want nil, false, boom", got, over, err)
	}
}

func TestReadIntoAppends(t *testing.T) {
	buf := bytes.NewBufferString("x:")
	over, err := ReadInto(buf, strings.NewReader("abcdef"), 3)
	if err != nil || !over || buf.String() != "x:abc" {
		t.Fatalf("ReadInto = %q, %v, %v; want \"x:abc\", true", buf.String(), over, err)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }
