package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lambent/lambent/pkg/api"
)

// modelSteps is the work modelItems does on items: the steps it counts.
func modelSteps(items []api.Item) int {
	r := &run{}
	r.modelItems(items)
	return r.modelSteps
}

// lateResultsItems is n turns of one mcp_call each, every turn closed by a
// user message, then the n calls again with their results (run in a
// continuation): each result goes back to its own turn.
func lateResultsItems(n int) []api.Item {
	items := make([]api.Item, 0, 3*n)
	for i := range n {
		id := fmt.Sprint("mcp_", i)
		items = append(items, api.Item{Type: api.ItemMCPCall, ID: id, Name: "lookup", Arguments: "{}", Status: api.ItemInProgress, Hidden: api.ItemHidden{TurnStart: true}},
			api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "next"}}})
	}
	for i := range n {
		items = append(items, api.Item{Type: api.ItemMCPCall, ID: fmt.Sprint("mcp_", i), Name: "lookup", Arguments: "{}", Status: api.ItemCompleted, Output: "ok"})
	}
	return items
}

// A result that arrives after its turn closed is put after that turn's
// results in work independent of the conversation's turns: finding the
// turn and moving every later one took steps proportional to the turns,
// quadratic over a long chain. Four times the turns may cost four times
// the steps, not sixteen.
func TestLateResultsLinear(t *testing.T) {
	small, large := modelSteps(lateResultsItems(200)), modelSteps(lateResultsItems(800))
	assert.Less(t, float64(large)/float64(small), 8.0, "steps: %d for 200 turns, %d for 800", small, large)
}

// deniedItems is n approval requests of one turn, then a denial of each.
func deniedItems(n int) []api.Item {
	items := make([]api.Item, 0, 2*n)
	for i := range n {
		items = append(items, api.Item{Type: api.ItemMCPApprovalRequest, ID: fmt.Sprint("mcpr_", i), Name: "lookup", Arguments: "{}",
			Hidden: api.ItemHidden{ModelCallID: fmt.Sprint("call_", i)}})
	}
	for i := range n {
		items = append(items, api.Item{Type: api.ItemMCPApprovalResponse, ID: fmt.Sprint("mcpa_", i), ApprovalRequestID: fmt.Sprint("mcpr_", i)})
	}
	return items
}

// A denied approval's call id is found in work independent of the
// conversation's length: each denial scanned every item, quadratic over
// many. Four times the denials may cost four times the steps.
func TestDenialsLinear(t *testing.T) {
	small, large := modelSteps(deniedItems(200)), modelSteps(deniedItems(800))
	assert.Less(t, float64(large)/float64(small), 8.0, "steps: %d for 200 denials, %d for 800", small, large)
}
