// Package logbuf is a buffer that loggers write to concurrently and tests
// read: the log sink of tests that assert on log lines.
package logbuf

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Lines returns the lines written so far, without the empty last one.
func (b *Buffer) Lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Records returns the JSON log records written so far (slog's JSON
// handler: one object a line).
func (b *Buffer) Records() ([]map[string]any, error) {
	var out []map[string]any
	for _, l := range b.Lines() {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return nil, fmt.Errorf("log line %q: %w", l, err)
		}
		out = append(out, m)
	}
	return out, nil
}
