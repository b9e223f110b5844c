package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lambent/lambent/internal/textcut"
)

// MaxLogAttrBytes bounds the text of one log attribute (a string, an
// error's text, each attribute of a group): longer text is cut there, with
// a note of its length. Request- and upstream-controlled text (a header a
// refusal quotes, an MCP server's or a provider's error) then never makes
// a log line arbitrarily large.
const MaxLogAttrBytes = 4 << 10

// boundedHandler cuts each attribute of its records to MaxLogAttrBytes
// before h handles them.
type boundedHandler struct {
	slog.Handler
}

// Handle implements slog.Handler.
func (h boundedHandler) Handle(ctx context.Context, r slog.Record) error {
	over := false
	r.Attrs(func(a slog.Attr) bool {
		over = overBound(a.Value)
		return !over
	})
	if !over {
		return h.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h boundedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	bounded := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		bounded[i] = boundAttr(a)
	}
	return boundedHandler{h.Handler.WithAttrs(bounded)}
}

// WithGroup implements slog.Handler.
func (h boundedHandler) WithGroup(name string) slog.Handler {
	return boundedHandler{h.Handler.WithGroup(name)}
}

// logText is the text of v that a handler writes, when it is a string or
// an error (resolved), and whether it is one.
func logText(v slog.Value) (string, bool) {
	switch v.Kind() {
	case slog.KindString:
		return v.String(), true
	case slog.KindAny:
		if err, ok := v.Any().(error); ok && err != nil {
			return errorText(err)
		}
	}
	return "", false
}

// errorText is err's text, ok false when its Error panics (a typed nil
// error): the value is then left to the handler, which shows it as slog
// does ("<nil>", or the panic), where the panic would end the logging
// call.
func errorText(err error) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	return err.Error(), true
}

// overBound reports whether v (resolved), or an attribute of its group,
// has text over MaxLogAttrBytes.
func overBound(v slog.Value) bool {
	v = v.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, a := range v.Group() {
			if overBound(a.Value) {
				return true
			}
		}
		return false
	}
	s, ok := logText(v)
	return ok && len(s) > MaxLogAttrBytes
}

// boundAttr is a with its text, and that of its group's attributes, cut to
// MaxLogAttrBytes.
func boundAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		group := v.Group()
		bounded := make([]slog.Attr, len(group))
		for i, g := range group {
			bounded[i] = boundAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(bounded...)}
	}
	if s, ok := logText(v); ok && len(s) > MaxLogAttrBytes {
		return slog.String(a.Key, cutLogText(s))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// cutLogText is s cut to MaxLogAttrBytes (on a rune boundary) with a note
// of its length.
func cutLogText(s string) string {
	return fmt.Sprintf("%s…[cut: %d bytes]", textcut.Prefix(s, MaxLogAttrBytes), len(s))
}
