package app

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

type bigValuer struct{}

func (bigValuer) LogValue() slog.Value {
	return slog.StringValue(strings.Repeat("v", 3*MaxLogAttrBytes))
}

// Every attribute's text is cut to MaxLogAttrBytes: a string, an error, a
// LogValuer's, a group's, one added by With; short ones are untouched.
func TestLoggerBoundsAttributes(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		big := strings.Repeat("é", MaxLogAttrBytes) // 2 bytes a rune
		log := formatLogger(t, format, &buf).With("with", big)
		log.Info("m", "s", big, "err", errors.New(big), "valuer", bigValuer{}, slog.Group("g", "inner", big), "short", "ok", "n", 7)
		line := buf.String()
		if n := len(line); n > 6*MaxLogAttrBytes+1024 {
			t.Errorf("%s: a line of %d bytes", format, n)
		}
		if c := strings.Count(line, "…[cut: "); c != 5 {
			t.Errorf("%s: %d cut attributes, want 5: %.300s", format, c, line)
		}
		if !strings.Contains(line, "ok") || !strings.Contains(line, "7") || strings.Contains(line, "\ufffd") {
			t.Errorf("%s: %.300s", format, line)
		}
	}
}

// nilErr is an error whose Error dereferences its receiver.
type nilErr struct{ msg string }

func (e *nilErr) Error() string { return e.msg }

// A typed nil error (a nil *T in an error) is logged as slog logs it,
// "<nil>", not a panic of the logging call: slog recovers the panic of its
// Error, and so must the cut of long text.
func TestLoggerTypedNilError(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		var e *nilErr
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: logging a typed nil error panicked: %v", format, p)
				}
			}()
			formatLogger(t, format, &buf).Info("m", "err", error(e), slog.Group("g", "err", error(e)))
			formatLogger(t, format, &buf).With("err", error(e)).Info("m")
		}()
		if !strings.Contains(buf.String(), "<nil>") {
			t.Errorf("%s: %q, want the error shown as <nil>", format, buf.String())
		}
	}
}

// formatLogger is app.Logger writing to w in format (LAMBENT_LOG_FORMAT).
func formatLogger(t *testing.T, format string, w io.Writer) *slog.Logger {
	t.Helper()
	cfg, err := FromEnv(func(k string) string { return map[string]string{"LAMBENT_LOG_FORMAT": format}[k] })
	if err != nil {
		t.Fatal(err)
	}
	return Logger(cfg, w)
}
