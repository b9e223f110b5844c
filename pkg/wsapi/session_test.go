package wsapi

import (
	"testing"

	"github.com/lambent/lambent/pkg/store"
)

// TestMemoryCacheInProcess: the connection's cache is in process, so the
// engine's write of a response to it needs no deadline (and no timer).
func TestMemoryCacheInProcess(t *testing.T) {
	var c any = NewMemoryCache()
	p, ok := c.(store.InProcess)
	if !ok || !p.InProcess() {
		t.Fatal("MemoryCache is not store.InProcess")
	}
}
