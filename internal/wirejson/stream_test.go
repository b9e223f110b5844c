package wirejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// elem has a method of its own, whose output the encoder compacts and
// escapes, as it does the API's items.
type elem struct{ S string }

func (e elem) MarshalJSON() ([]byte, error) {
	if e.S == "fail" {
		return nil, errors.New("no")
	}
	return []byte(`{ "s" : ` + string(mustMarshal(e.S)) + ` , "html": "<&>" }`), nil
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type inner struct {
	Name  string `json:"name"`
	Items []elem `json:"items"`
}

type outer struct {
	Model string `json:"model"`
	// Raw comes first: the key of an array in it must not be taken for
	// the array's.
	Raw    json.RawMessage `json:"raw,omitempty"`
	Inner  *inner          `json:"inner"`
	Others []elem          `json:"others"`
	Tail   map[string]int  `json:"tail"`
}

// streamOf builds the stream of v, its arrays left empty in the shell.
func streamOf(t *testing.T, v *outer) *Stream {
	t.Helper()
	shell := *v
	in := *v.Inner
	in.Items = []elem{}
	shell.Inner, shell.Others = &in, []elem{}
	// Given in another order than they come.
	s, err := NewStream(v, &shell,
		Array{Key: "others", Len: len(v.Others), Elem: func(i int) (any, error) { return v.Others[i], nil }},
		Elements("items", v.Inner.Items))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStreamMatchesMarshal: however it is read (small reads, WriteTo,
// part appended then read), a Stream is Marshal's bytes.
func TestStreamMatchesMarshal(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("row <b> é \u2028 \"q\"\n", 4000)
	vals := map[string]*outer{
		"arrays":    {Model: "m", Inner: &inner{Name: "n", Items: []elem{{"a"}, {long}, {"c"}}}, Others: []elem{{long}, {"x"}}, Tail: map[string]int{"b": 2, "a": 1}},
		"empty":     {Model: "m", Inner: &inner{Name: "n", Items: []elem{}}, Others: []elem{}},
		"ambiguous": {Model: "m", Inner: &inner{Items: []elem{{"a"}}}, Raw: json.RawMessage(`{"items" : [ ]}`), Others: []elem{{"b"}}},
	}
	reads := map[string]func(s *Stream) ([]byte, error){
		"one byte reads": func(s *Stream) ([]byte, error) { return io.ReadAll(iotest.OneByteReader(s)) },
		"WriteTo": func(s *Stream) ([]byte, error) {
			var b bytes.Buffer
			_, err := s.WriteTo(&b)
			return b.Bytes(), err
		},
		"AppendTo then Read": func(s *Stream) ([]byte, error) {
			b, done, err := s.AppendTo([]byte(nil), 100)
			if err != nil || done {
				return b, err
			}
			rest, err := io.ReadAll(iotest.HalfReader(s))
			return append(b, rest...), err
		},
	}
	for name, v := range vals {
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for how, read := range reads {
			got, err := read(streamOf(t, v))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s, %s: %d bytes, %v; want Marshal's %d bytes", name, how, len(got), err, len(want))
			}
		}
	}
	s := streamOf(t, vals["arrays"])
	if b, done, err := s.AppendTo(nil, 1<<30); !done || err != nil || len(b) == 0 {
		t.Errorf("AppendTo with room: done %v, %v", done, err)
	}
}

// TestStreamErrors: the shell's error is NewStream's, an element's is the
// reader's.
func TestStreamErrors(t *testing.T) {
	t.Parallel()
	if _, err := NewStream(nil, struct{ Raw json.RawMessage }{json.RawMessage("{")}); err == nil {
		t.Error("an invalid shell was accepted")
	}
	v := &outer{Inner: &inner{Items: []elem{{"a"}, {"fail"}}}, Others: []elem{}}
	if _, err := io.ReadAll(streamOf(t, v)); err == nil {
		t.Error("Read: an element's error was lost")
	}
	if _, err := streamOf(t, v).WriteTo(io.Discard); err == nil {
		t.Error("WriteTo: an element's error was lost")
	}
}
