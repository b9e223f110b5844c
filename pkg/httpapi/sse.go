package httpapi

import (
	"fmt"
	"net/http"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
)

// responseWriter adapts an http.ResponseWriter to engine.ResponseWriter:
// events as Server-Sent Events (each written in one Write, then flushed),
// the final response as JSON.
type responseWriter struct {
	h       *Handler
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	// buf holds the event being written, reused for every event.
	buf []byte
}

func (rw *responseWriter) start() {
	hd := rw.w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	rw.w.WriteHeader(http.StatusOK)
	rw.rc = http.NewResponseController(rw.w)
	rw.started = true
}

// WriteEvent writes "event: <type>\ndata: <json>\n\n" in one write and
// flushes. The data line is json.Marshal of ev.
func (rw *responseWriter) WriteEvent(ev *api.StreamEvent) error {
	if !rw.started {
		rw.start()
	}
	b := rw.eventBuf()
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
	return rw.flush(b)
}

// WriteRawEvent writes a stored event's JSON as one SSE event.
func (rw *responseWriter) WriteRawEvent(typ string, data []byte) error {
	if !rw.started {
		rw.start()
	}
	b := rw.eventBuf()
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	rw.buf = b
	return rw.flush(b)
}

// eventBuf returns the emptied event buffer, sized for a response event.
func (rw *responseWriter) eventBuf() []byte {
	if rw.buf == nil {
		rw.buf = make([]byte, 0, 4096)
	}
	return rw.buf[:0]
}

// WriteComment writes an SSE comment line (a keep-alive).
func (rw *responseWriter) WriteComment(text string) error {
	if !rw.started {
		rw.start()
	}
	return rw.flush([]byte(": " + text + "\n\n"))
}

func (rw *responseWriter) flush(p []byte) error {
	if _, err := rw.w.Write(p); err != nil {
		return err
	}
	return rw.rc.Flush()
}

// done ends the stream with the [DONE] sentinel.
func (rw *responseWriter) done() {
	_ = rw.flush([]byte("data: [DONE]\n\n"))
}

// WriteResponse writes the final response as JSON.
func (rw *responseWriter) WriteResponse(r *api.Response) error {
	rw.started = true
	rw.h.writeJSON(rw.w, http.StatusOK, r)
	return nil
}
