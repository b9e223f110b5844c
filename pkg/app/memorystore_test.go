package app

import (
	"context"
	"io"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
)

// LAMBENT_MEMORY_MAX_BYTES bounds the memory store the app builds; the
// default is store.DefaultMemoryMaxBytes, and a bad value is refused.
func TestMemoryMaxBytes(t *testing.T) {
	env := map[string]string{"LAMBENT_STORE": "memory", "LAMBENT_MEMORY_MAX_BYTES": "4096"}
	cfg, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.MemoryMaxBytes != 4096 {
		t.Fatalf("MemoryMaxBytes %d", cfg.Store.MemoryMaxBytes)
	}
	a, err := Build(context.Background(), cfg, Logger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m, ok := a.Store.(*store.Memory)
	if !ok {
		t.Fatalf("store %T", a.Store)
	}
	long := string(make([]byte, 8192))
	rec := &store.Record{Response: &api.Response{ID: "resp_x", Status: api.StatusCompleted, Instructions: &long}}
	if err := m.CheckSize(rec); err == nil {
		t.Error("a record over 4096 bytes fits")
	}

	cfg, err = FromEnv(func(string) string { return "" })
	if err != nil || cfg.Store.MemoryMaxBytes != store.DefaultMemoryMaxBytes {
		t.Errorf("default: %d, %v", cfg.Store.MemoryMaxBytes, err)
	}
	env["LAMBENT_MEMORY_MAX_BYTES"] = "lots"
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil {
		t.Error("a bad LAMBENT_MEMORY_MAX_BYTES is accepted")
	}
}
