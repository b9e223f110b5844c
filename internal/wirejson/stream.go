package wirejson

import (
	"bytes"
	"io"
	"slices"

	fastjson "github.com/segmentio/encoding/json"
)

// flags are json.Marshal's: HTML characters escaped, map keys sorted.
const flags = fastjson.EscapeHTML | fastjson.SortMapKeys

// flushAt is how many bytes of small elements WriteTo gathers before it
// writes them.
const flushAt = 32 << 10

// Array is one array of a value read as a Stream: the array at key Key,
// whose Len elements Elem returns (an element is encoded as Marshal would
// encode it in the array; a value whose MarshalJSON would give the same
// bytes saves the copy that method returns).
type Array struct {
	Key  string
	Len  int
	Elem func(i int) (any, error)
}

// Elements is the Array of the elements of s at key (each encoded through
// a pointer to it).
func Elements[T any](key string, s []T) Array {
	return Array{Key: key, Len: len(s), Elem: func(i int) (any, error) { return &s[i], nil }}
}

// Stream is the JSON of a value, byte for byte as Marshal encodes it, in
// pieces: the value's encoding with some arrays left empty (its shell),
// and the elements of those arrays encoded one at a time into a buffer the
// stream reuses. A value of tens of megabytes — a long agentic loop's
// model request, response or stored record — is then never held encoded
// whole, nor in the copies a growing buffer leaves behind. A Stream is an
// io.Reader and an io.WriterTo, read once; it is not safe for concurrent
// use, and the arrays must not change while it is read.
type Stream struct {
	// parts are the shell's bytes around the arrays: parts[i] precedes
	// arrays[i]'s elements, the last one follows the last array's.
	parts  [][]byte
	arrays []Array
	// stage is the next piece: an even stage is parts[stage/2], an odd
	// one the elements of arrays[stage/2], from element elem.
	stage, elem int
	buf         []byte
	// pending is what Read has not handed out yet of the last piece.
	pending []byte
	err     error
}

// NewStream returns the Stream of v, given shell: v with each of arrays
// empty (not nil: "key":[] in its JSON; in v too, an array must not be
// nil, whose JSON would be null). The shell is encoded at once (its
// errors are returned here), the elements as the stream is read. When a
// key does not occur in the shell's JSON exactly once as an empty array
// (raw JSON in the shell holding the same key, say), the stream is v's
// JSON encoded whole.
func NewStream(v, shell any, arrays ...Array) (*Stream, error) {
	b, err := Marshal(shell)
	if err != nil {
		return nil, err
	}
	type place struct {
		at int // index of the array's ']' in b
		a  Array
	}
	places := make([]place, 0, len(arrays))
	var marker []byte
	for _, a := range arrays {
		marker = append(append(append(marker[:0], '"'), a.Key...), `":[]`...)
		i := bytes.Index(b, marker)
		if i < 0 || bytes.Contains(b[i+1:], marker) {
			return whole(v)
		}
		places = append(places, place{i + len(marker) - 1, a})
	}
	slices.SortFunc(places, func(x, y place) int { return x.at - y.at })
	s := &Stream{parts: make([][]byte, 0, len(places)+1), arrays: make([]Array, 0, len(places))}
	from := 0
	for _, p := range places {
		s.parts = append(s.parts, b[from:p.at])
		s.arrays = append(s.arrays, p.a)
		from = p.at
	}
	s.parts = append(s.parts, b[from:])
	return s, nil
}

// whole returns the Stream of v encoded at once (Marshal).
func whole(v any) (*Stream, error) {
	b, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return &Stream{parts: [][]byte{b}}, nil
}

// appendPiece appends the stream's next piece to b: a part of the shell,
// or the next element with the comma before it; io.EOF after the last.
func (s *Stream) appendPiece(b []byte) ([]byte, error) {
	for {
		if s.stage%2 == 0 {
			i := s.stage / 2
			if i >= len(s.parts) {
				return b, io.EOF
			}
			s.stage++
			return append(b, s.parts[i]...), nil
		}
		if s.stage/2 >= len(s.arrays) {
			s.stage++
			continue
		}
		a := &s.arrays[s.stage/2]
		if s.elem >= a.Len {
			s.stage++
			s.elem = 0
			continue
		}
		if s.elem > 0 {
			b = append(b, ',')
		}
		s.elem++
		v, err := a.Elem(s.elem - 1)
		if err != nil {
			return b, err
		}
		return fastjson.Append(b, v, flags)
	}
}

// Read reads the next bytes of the JSON.
func (s *Stream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.pending) == 0 {
			if s.err != nil {
				break
			}
			s.buf, s.err = s.appendPiece(s.buf[:0])
			s.pending = s.buf
			continue
		}
		c := copy(p[n:], s.pending)
		s.pending = s.pending[c:]
		n += c
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.err
}

// WriteTo writes the rest of the JSON to w: small elements gathered into
// one write, a large one written as it is encoded.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	var n int64
	b := append(s.buf[:0], s.pending...)
	s.pending = nil
	for {
		if s.err == nil {
			b, s.err = s.appendPiece(b)
		}
		if len(b) >= flushAt || s.err != nil && len(b) > 0 {
			m, err := w.Write(b)
			n += int64(m)
			b = b[:0]
			if err != nil {
				s.buf = b
				return n, err
			}
		}
		if s.err != nil {
			s.buf = b
			if s.err == io.EOF {
				return n, nil
			}
			return n, s.err
		}
	}
}

// AppendTo appends the JSON to b until b holds more than max bytes or the
// JSON has ended (done); the rest can then be read from s.
func (s *Stream) AppendTo(b []byte, max int) (_ []byte, done bool, err error) {
	b = append(b, s.pending...)
	s.pending = nil
	for len(b) <= max && s.err == nil {
		b, s.err = s.appendPiece(b)
	}
	switch {
	case s.err == io.EOF:
		return b, true, nil
	case s.err != nil:
		return b, false, s.err
	}
	return b, false, nil
}
