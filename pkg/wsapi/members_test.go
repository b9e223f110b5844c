package wsapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/allocs"
	"github.com/lambent/lambent/pkg/api"
)

// A message's members are counted before they are decoded, as a body's
// are (api.DecodeCreateRequest): 8 MB of unknown keys in a response.create
// were decoded twice (its lane, then its fields) and encoded again before
// the first was refused.
func TestMessageMembersCountedBeforeDecoding(t *testing.T) {
	const size = 8 << 20
	var pairs strings.Builder
	for i := 0; pairs.Len() < size; i++ {
		fmt.Fprintf(&pairs, `"%x":1,`, i)
	}
	m := Message{Data: []byte(`{"type":"response.create",` + strings.TrimSuffix(pairs.String(), ",") + `}`)}
	m.Size = int64(len(m.Data))
	var err error
	alloc := allocs.Bytes(func() {
		Route(m)
		_, err = DecodeCreate(m, 2*size)
	})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "limit_exceeded" {
		t.Errorf("8 MiB of members: %v, want a 400 limit_exceeded", err)
	}
	if alloc > 8*size {
		t.Errorf("decoding allocated %d MB for a message of %d MB", alloc>>20, size>>20)
	}
}
