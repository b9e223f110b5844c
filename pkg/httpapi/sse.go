package httpapi

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
)

// responseWriter adapts an http.ResponseWriter to engine.ResponseWriter:
// events as Server-Sent Events, the final response as JSON. Events are
// collected in a buffer; Flush (engine.Flusher, pacing.Flusher) sends them
// in one Write and flushes it, so every write holds only whole events. The
// handler wraps it in a pacing.Writer, which decides when it flushes (so
// that events ready together share one write) and sends the keep-alive
// comments; it is not safe for concurrent use on its own.
//
// The status line and the SSE headers go out with the first write to the
// client, not with the first event buffered: until then the stream can be
// taken back (Retract, pacing.Retracter) and the request answered with an
// HTTP error instead (a stream the model provider refused before it
// began: docs/api.md, "Errors").
type responseWriter struct {
	h *Handler
	w http.ResponseWriter
	// fe flushes w when it has a FlushError method (net/http's writer
	// has), else rc (a writer wrapping one).
	fe interface{ FlushError() error }
	rc *http.ResponseController
	// started is set once the status line went out (start).
	started bool
	// buf holds the whole SSE frames not yet written, reused after each
	// flush; bp is where it came from (sseBuffers), nil until the first
	// frame.
	buf []byte
	bp  *[]byte
}

// start writes the status line and the SSE headers, once, before the
// first write to the client.
func (rw *responseWriter) start() {
	if rw.started {
		return
	}
	// The three values share one array, each header its own full slice
	// of it; the names are canonical already.
	v := &[3]string{"text/event-stream; charset=utf-8", "no-cache", "no"}
	hd := rw.w.Header()
	hd["Content-Type"], hd["Cache-Control"], hd["X-Accel-Buffering"] = v[0:1:1], v[1:2:2], v[2:3:3]
	rw.w.WriteHeader(http.StatusOK)
	if fe, ok := rw.w.(interface{ FlushError() error }); ok {
		rw.fe = fe
	} else {
		rw.rc = http.NewResponseController(rw.w)
	}
	rw.started = true
}

// buffer takes the stream's buffer from sseBuffers, once, before the
// first frame.
func (rw *responseWriter) buffer() {
	if rw.bp == nil {
		rw.bp = sseBuffers.Get().(*[]byte)
		rw.buf = (*rw.bp)[:0]
	}
}

// begun reports whether the stream has begun: something went out, or
// waits in the buffer to go out.
func (rw *responseWriter) begun() bool { return rw.started || len(rw.buf) > 0 }

// Retract drops the buffered events when nothing was written to the
// client yet, and reports whether it did (pacing.Retracter): the handler
// then answers with an HTTP error.
func (rw *responseWriter) Retract() bool {
	if rw.started {
		return false
	}
	rw.buf = rw.buf[:0]
	return true
}

// sseBuffers hold the buffers of streams that ended (release), so that a
// stream, whose deltas the model sent together share one write, does not
// grow a new one.
var sseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// maxPooledBuffer is the largest buffer kept for another stream.
const maxPooledBuffer = 64 << 10

// release gives the buffer back once the stream has ended (nothing is
// written after it).
func (rw *responseWriter) release() {
	if rw.bp == nil {
		return
	}
	if cap(rw.buf) <= maxPooledBuffer {
		*rw.bp = rw.buf[:0]
		sseBuffers.Put(rw.bp)
	}
	rw.bp, rw.buf = nil, nil
}

// WriteEvent buffers "event: <type>\ndata: <json>\n\n" until the next
// Flush. The data line is the wire JSON of ev, encoded in the buffer.
func (rw *responseWriter) WriteEvent(ev *api.StreamEvent) error {
	rw.buffer()
	if ev.Response != nil && len(ev.Response.Output) > 0 {
		return rw.responseFrame(ev)
	}
	n := len(rw.buf)
	b, err := wirejson.Append(rw.head(ev.Type), ev.Wire())
	if err != nil {
		rw.buf = rw.buf[:n]
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	rw.buf = append(b, "\n\n"...)
	return rw.spill()
}

// responseFrame buffers the SSE frame of an event carrying a response with
// output, its items encoded one at a time (api.Response.Shell): a frame longer
// than a pooled buffer (a terminal event carrying a long conversation's
// response) is written through as it is encoded, so that the stream never
// holds the response's JSON whole.
func (rw *responseWriter) responseFrame(ev *api.StreamEvent) error {
	shell := *ev
	var arrays []wirejson.Array
	shell.Response, arrays = ev.Response.Shell()
	s, err := wirejson.NewStream(ev, shell.Wire(), arrays...)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	mark := len(rw.buf)
	b, done, err := s.AppendTo(rw.head(ev.Type), maxPooledBuffer)
	if err != nil {
		rw.buf = b[:mark]
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	if !done {
		rw.start()
		if _, err := rw.w.Write(b); err != nil {
			return err
		}
		b = b[:0]
		if _, err := s.WriteTo(rw.w); err != nil {
			return err
		}
	}
	rw.buf = append(b, "\n\n"...)
	return nil
}

// spill writes the buffered frames through, without a flush, once they are
// more than a pooled buffer holds (a terminal event carrying a long
// conversation's response): the stream's memory then holds that JSON once,
// while it is encoded, and keeps no buffer of its size.
func (rw *responseWriter) spill() error {
	if len(rw.buf) <= maxPooledBuffer {
		return nil
	}
	err := rw.write()
	rw.buf = (*rw.bp)[:0]
	return err
}

// head appends the lines before an event's data to the buffer.
func (rw *responseWriter) head(typ string) []byte {
	b := append(rw.buf, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...)
}

// frame buffers the SSE frame of a stored event's JSON data. A frame larger
// than a pooled buffer (a terminal event carrying a long conversation's
// response) is written through with what is buffered before it, rather
// than copied into the buffer: the stream's memory then holds its JSON
// once, not twice.
func (rw *responseWriter) frame(typ string, data []byte) error {
	b := rw.head(typ)
	if len(data) <= maxPooledBuffer {
		b = append(b, data...)
		rw.buf = append(b, "\n\n"...)
		return nil
	}
	rw.buf = b[:0]
	rw.start()
	if _, err := rw.w.Write(b); err != nil {
		return err
	}
	if _, err := rw.w.Write(data); err != nil {
		return err
	}
	rw.buf = append(rw.buf, "\n\n"...)
	return nil
}

// WriteRawEvent buffers a stored event's JSON as one SSE event until the
// next Flush.
func (rw *responseWriter) WriteRawEvent(typ string, data []byte) error {
	rw.buffer()
	return rw.frame(typ, data)
}

// WriteComment sends an SSE comment line (a keep-alive) with the events
// buffered before it.
func (rw *responseWriter) WriteComment(text string) error {
	rw.buffer()
	rw.buf = append(append(append(rw.buf, ": "...), text...), "\n\n"...)
	return rw.Flush()
}

// Flush writes the buffered events in one Write and flushes them to the
// client. Nothing buffered is nothing to do.
func (rw *responseWriter) Flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	if err := rw.write(); err != nil {
		return err
	}
	if rw.fe != nil {
		return rw.fe.FlushError()
	}
	return rw.rc.Flush()
}

// write writes the buffered events in one Write, without a flush, the
// status line and headers before them the first time.
func (rw *responseWriter) write() error {
	rw.start()
	_, err := rw.w.Write(rw.buf)
	rw.buf = rw.buf[:0]
	return err
}

// done ends the stream: the buffered events and the [DONE] sentinel, in
// one write. A stream with nothing before it (a resumed stream that starts
// past the end) is just the sentinel. It is not flushed: the handler
// returns next, and net/http sends it with the end of the chunked body,
// in one write to the connection rather than two.
func (rw *responseWriter) done() {
	rw.buffer()
	rw.buf = append(rw.buf, "data: [DONE]\n\n"...)
	_ = rw.write()
}

// WriteResponse writes the final response as JSON.
func (rw *responseWriter) WriteResponse(r *api.Response) error {
	rw.started = true
	rw.h.writeJSON(rw.w, http.StatusOK, r)
	return nil
}
