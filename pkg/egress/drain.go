package egress

import (
	"io"
	"time"
)

// MaxDrain bounds what DrainClose reads of a response body before closing
// it, and MaxDrainWait how long it reads.
const (
	MaxDrain     = 64 << 10
	MaxDrainWait = 200 * time.Millisecond
)

// DrainClose reads what is left of a response body, at most MaxDrain
// bytes for at most MaxDrainWait, and closes it. net/http hands a
// connection back to its pool only once the body was read to its end:
// closed unread, an error answer (an HTML error page, a 503 the caller
// does not read) closed its connection and the next request dialed again,
// with a TLS handshake. A longer rest, or one that trickles (a server
// that keeps the answer open: a stream after its [DONE], an error page
// sent slowly), is not worth waiting for: its connection closes, and the
// call that drains it returns.
func DrainClose(body io.ReadCloser) error {
	t := time.AfterFunc(MaxDrainWait, func() { _ = body.Close() })
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, MaxDrain)
	return body.Close()
}
