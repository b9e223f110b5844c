package httpapi

import (
	"fmt"
	"net/http"

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
type responseWriter struct {
	h       *Handler
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	// buf holds the whole SSE frames not yet written, reused after each
	// flush.
	buf []byte
}

func (rw *responseWriter) start() {
	hd := rw.w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	rw.w.WriteHeader(http.StatusOK)
	rw.rc = http.NewResponseController(rw.w)
	rw.buf = make([]byte, 0, 4096)
	rw.started = true
}

// WriteEvent buffers "event: <type>\ndata: <json>\n\n" until the next
// Flush. The data line is the wire JSON of ev.
func (rw *responseWriter) WriteEvent(ev *api.StreamEvent) error {
	if !rw.started {
		rw.start()
	}
	b := rw.buf
	b = append(b, "event: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	data, err := wirejson.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	b = append(b, data...)
	b = append(b, "\n\n"...)
	rw.buf = b
	return nil
}

// WriteRawEvent buffers a stored event's JSON as one SSE event until the
// next Flush.
func (rw *responseWriter) WriteRawEvent(typ string, data []byte) error {
	if !rw.started {
		rw.start()
	}
	b := rw.buf
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	rw.buf = b
	return nil
}

// WriteComment sends an SSE comment line (a keep-alive) with the events
// buffered before it.
func (rw *responseWriter) WriteComment(text string) error {
	if !rw.started {
		rw.start()
	}
	rw.buf = append(append(append(rw.buf, ": "...), text...), "\n\n"...)
	return rw.Flush()
}

// Flush writes the buffered events in one Write and flushes them to the
// client. Nothing buffered is nothing to do.
func (rw *responseWriter) Flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	_, err := rw.w.Write(rw.buf)
	rw.buf = rw.buf[:0]
	if err != nil {
		return err
	}
	return rw.rc.Flush()
}

// done ends the stream: the buffered events and the [DONE] sentinel, in
// one write. A stream with nothing before it (a resumed stream that starts
// past the end) is just the sentinel.
func (rw *responseWriter) done() {
	if !rw.started {
		rw.start()
	}
	rw.buf = append(rw.buf, "data: [DONE]\n\n"...)
	_ = rw.Flush()
}

// WriteResponse writes the final response as JSON.
func (rw *responseWriter) WriteResponse(r *api.Response) error {
	rw.started = true
	rw.h.writeJSON(rw.w, http.StatusOK, r)
	return nil
}
