package egress

import "io"

// MaxDrain bounds what DrainClose reads of a response body before closing
// it.
const MaxDrain = 64 << 10

// DrainClose reads what is left of a response body, at most MaxDrain
// bytes, and closes it. net/http hands a connection back to its pool only
// once the body was read to its end: closed unread, an error answer (an
// HTML error page, a 503 the caller does not read) closed its connection
// and the next request dialed again, with a TLS handshake. A longer rest
// is not worth reading; its connection closes. The read ends with the
// request's context.
func DrainClose(body io.ReadCloser) error {
	_, _ = io.CopyN(io.Discard, body, MaxDrain)
	return body.Close()
}
