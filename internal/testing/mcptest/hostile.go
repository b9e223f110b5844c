package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile describes a malicious MCP server, for hostile-input tests and
// measurements. It is the SDK server of NewServer whose tools/list and
// tools/call answers a receiving middleware replaces (the SDK itself would
// never list two tools of one name nor page forever), behind an HTTP
// wrapper that can trickle its replies. The zero value lists one tool,
// "t0", and answers calls with "ok".
type Hostile struct {
	// Tools is how many tools each listing page offers (default 1).
	Tools int
	// Empty makes every listing page empty (with EndlessPages: a server
	// that pages forever without listing anything).
	Empty bool
	// Name, when set, names every tool of the listing (duplicates);
	// otherwise they are t0, t1, …
	Name string
	// EndlessPages gives every listing page a next page (a fresh cursor
	// each time).
	EndlessPages bool
	// SameCursor, with EndlessPages, names the same next page every time.
	SameCursor bool
	// DescriptionBytes pads each listed tool's description to that many
	// bytes (an oversized listing).
	DescriptionBytes int
	// CallBytes makes every call's result that many bytes of text (an
	// oversized reply).
	CallBytes int
	// Trickle, when set, answers TrickleMethod by sending one byte of JSON
	// whitespace every Trickle, never the reply: a server that keeps the
	// connection busy forever.
	Trickle time.Duration
	// TrickleMethod is the method Trickle slows: "tools/list" or
	// "tools/call" (empty: both).
	TrickleMethod string
	// JSONResponse answers with application/json instead of an event
	// stream.
	JSONResponse bool
	// InputSchema, when set, is every listed tool's input schema (default
	// {"type":"object"}); calls answer "ok" whatever their arguments.
	InputSchema json.RawMessage
	// ReadOnly annotates every listed tool readOnlyHint: a server that
	// claims its tools are harmless.
	ReadOnly bool
	// ErrorBytes, when set, answers every listing and call with a
	// JSON-RPC error whose message is that many bytes (a huge error).
	ErrorBytes int
}

// page is one listing page of h.
func (h Hostile) page() []*sdk.Tool {
	if h.Empty {
		return []*sdk.Tool{}
	}
	n := max(h.Tools, 1)
	desc := strings.Repeat("d", h.DescriptionBytes)
	schema := h.InputSchema
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	out := make([]*sdk.Tool, n)
	for i := range out {
		name := h.Name
		if name == "" {
			name = "t" + strconv.Itoa(i)
		}
		out[i] = &sdk.Tool{Name: name, Description: desc, InputSchema: schema}
		if h.ReadOnly {
			out[i].Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
		}
	}
	return out
}

// middleware replaces the SDK server's listings and call results.
func (h Hostile) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	page := h.page()
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if h.ErrorBytes > 0 && (method == "tools/list" || method == "tools/call") {
			return nil, errors.New(strings.Repeat("e", h.ErrorBytes))
		}
		switch method {
		case "tools/list":
			res := &sdk.ListToolsResult{Tools: page}
			if h.EndlessPages {
				res.NextCursor = "next"
				if p, ok := req.GetParams().(*sdk.ListToolsParams); ok && !h.SameCursor {
					res.NextCursor = p.Cursor + "x"
				}
			}
			return res, nil
		case "tools/call":
			out := "ok"
			if h.CallBytes > 0 {
				out = strings.Repeat("x", h.CallBytes)
			}
			return text(out), nil
		}
		return next(ctx, method, req)
	}
}

// StartHostile serves the hostile server h over streamable HTTP at /mcp.
// The Server records every request's headers: len(Headers()) counts the
// requests it received.
func StartHostile(h Hostile) *Server {
	s := &Server{stop: make(chan struct{})}
	srv := NewServer(Options{stop: s.stop})
	srv.AddReceivingMiddleware(h.middleware)
	var handler http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: h.JSONResponse})
	if h.Trickle > 0 {
		handler = s.trickle(h.Trickle, h.TrickleMethod, handler)
	}
	return s.start(srv, handler)
}

// trickle answers requests of method (tools/list and tools/call when
// empty) with JSON whitespace, one byte every d, until the client or the
// server goes away; other requests reach next.
func (s *Server) trickle(d time.Duration, method string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		if !(msg.Method == method || method == "" && (msg.Method == "tools/list" || msg.Method == "tools/call")) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-s.stop:
				return
			}
		}
	})
}
