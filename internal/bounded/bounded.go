// Package bounded reads a body or payload under a byte bound: the one way
// the gateway reads at most limit bytes and tells whether there was more
// (a request body, a model's answer, an AWS reply, an image, a fetched
// page, a WebSocket message).
package bounded

import (
	"bytes"
	"io"
)

// Read reads r to its end or to limit+1 bytes, whichever comes first. over
// reports that r held more than limit bytes: data is then its first limit
// bytes, and exactly limit+1 bytes of r were consumed. size, the length r
// announces (a Content-Length; <= 0 when unknown), sizes the buffer at once
// when it is within limit, where growing it allocates about twice the
// data. On a read error, data is nil.
func Read(r io.Reader, size, limit int64) (data []byte, over bool, err error) {
	var buf bytes.Buffer
	if size > 0 && size <= limit {
		buf.Grow(int(size) + bytes.MinRead)
	}
	over, err = ReadInto(&buf, r, limit)
	if err != nil {
		return nil, false, err
	}
	return buf.Bytes(), over, nil
}

// ReadInto is Read appending to buf (a pooled buffer): at most limit bytes
// of r are added to it, over as for Read. On a read error, what was read
// stays in buf.
func ReadInto(buf *bytes.Buffer, r io.Reader, limit int64) (over bool, err error) {
	start := buf.Len()
	n, err := buf.ReadFrom(io.LimitReader(r, max(limit, 0)+1))
	if err != nil {
		return false, err
	}
	if n > limit {
		buf.Truncate(start + int(max(limit, 0)))
		return true, nil
	}
	return false, nil
}
