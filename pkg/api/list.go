package api

// Page limits of ListOptions.Limit.
const (
	// DefaultListLimit is the page size when ListOptions.Limit is zero.
	DefaultListLimit = 20
	// MaxListLimit is the largest page; larger limits are clamped to it.
	MaxListLimit = 100
)

// ListOptions page through a response's input items
// (GET /v1/responses/{id}/input_items).
type ListOptions struct {
	// After is an item id; listing starts after it.
	After string
	// Limit is the page size (1..MaxListLimit, default DefaultListLimit).
	Limit int
	// Order is "asc" or "desc" (default "desc", as the OpenAI API).
	Order string
}
