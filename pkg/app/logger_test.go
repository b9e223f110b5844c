package app

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestLoggerFormat: text on a terminal, JSON elsewhere; in Lambda JSON
// unless AWS_LAMBDA_LOG_FORMAT is Text; LAMBENT_LOG_FORMAT decides first.
func TestLoggerFormat(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	file, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	cases := []struct {
		name string
		env  map[string]string
		w    io.Writer
		text bool
	}{
		{"terminal", nil, tty, true},
		{"file", nil, file, false},
		{"buffer", nil, &bytes.Buffer{}, false},
		{"lambda default", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, tty, false},
		{"lambda text", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_LOG_FORMAT": "Text"}, file, true},
		{"forced json", map[string]string{"LAMBENT_LOG_FORMAT": "json"}, tty, false},
		{"forced text", map[string]string{"LAMBENT_LOG_FORMAT": "text"}, file, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got := textLogs(cfg, c.w); got != c.text {
				t.Errorf("text logs = %v, want %v", got, c.text)
			}
		})
	}
	if _, err := FromEnv(func(k string) string { return map[string]string{"LAMBENT_LOG_FORMAT": "yaml"}[k] }); err == nil || !strings.Contains(err.Error(), "LAMBENT_LOG_FORMAT") {
		t.Errorf("unknown format: err = %v", err)
	}
	var buf bytes.Buffer
	cfg, _ := FromEnv(func(k string) string { return map[string]string{"LAMBENT_LOG_FORMAT": "text"}[k] })
	Logger(cfg, &buf).Info("hello", "k", "v")
	if !strings.Contains(buf.String(), "msg=hello k=v") {
		t.Errorf("text log line: %q", buf.String())
	}
}
