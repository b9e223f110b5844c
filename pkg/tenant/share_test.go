package tenant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lambent/lambent/pkg/tenant"
)

// Tenants filling a queue of 16 one after the other: the first gets half,
// the second half of what is left, and a third still finds room.
func TestMayQueue(t *testing.T) {
	held, total := map[string]int{}, 0
	for _, tn := range []string{"acme", "globex", "initech"} {
		for tenant.MayQueue(held[tn], total, 16) {
			held[tn]++
			total++
		}
	}
	assert.Equal(t, map[string]int{"acme": 8, "globex": 4, "initech": 2}, held)
}
