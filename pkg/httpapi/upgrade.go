package httpapi

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/lambent/lambent/pkg/api"
)

// upgrade serves WebSocket mode (package wsapi). The handshake's refusals,
// which the WebSocket library answers in plain text (a malformed
// handshake, a cross-origin page, a front door that cannot upgrade: a
// ResponseWriter without Hijack, as Lambda's adapters), are answered in the
// OpenAI error shape like every other refusal.
func (h *Handler) upgrade(w http.ResponseWriter, r *http.Request) {
	rw := &refusal{ResponseWriter: w}
	h.ws.ServeHTTP(rw, r)
	if rw.status == 0 {
		return
	}
	for _, k := range []string{"Upgrade", "Connection", "Sec-WebSocket-Accept", "Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions", "X-Content-Type-Options"} {
		w.Header().Del(k)
	}
	e := &api.Error{Status: rw.status, Type: api.ErrTypeInvalidRequest, Code: "invalid_websocket_handshake",
		Message: strings.TrimSpace(rw.body.String())}
	if rw.status == http.StatusNotImplemented {
		e.Code, e.Message = "websocket_unsupported", "This endpoint cannot upgrade to a WebSocket: on AWS, WebSocket mode is served by the API Gateway WebSocket API (docs/api.md, WebSocket mode)."
	}
	h.writeError(w, r, e)
}

// refusal holds back a plain-text error (http.Error's: its status and at
// most 1 KiB of its body) written before the connection is hijacked;
// everything else goes through (wsapi's own refusals are JSON already).
type refusal struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *refusal) WriteHeader(code int) {
	if code >= http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusal) Write(b []byte) (int, error) {
	if w.status != 0 {
		w.body.Write(b[:min(len(b), 1<<10-w.body.Len())])
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives the WebSocket library (and http.ResponseController) the
// connection to hijack.
func (w *refusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }
