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

// PageSize is the page size o asks for: Limit, DefaultListLimit when it is
// not positive, at most MaxListLimit.
func (o ListOptions) PageSize() int {
	switch {
	case o.Limit <= 0:
		return DefaultListLimit
	case o.Limit > MaxListLimit:
		return MaxListLimit
	}
	return o.Limit
}

// Descending reports whether o lists newest first (any Order but "asc").
func (o ListOptions) Descending() bool { return o.Order != "asc" }

// CheckListQuery checks the order and limit a list's query asks for as
// the OpenAI API checks them: order "asc" or "desc", limit 1..MaxListLimit
// (a 400 invalid_value, integer_below_min_value or
// integer_above_max_value naming the parameter).
func CheckListQuery(order string, limit int) error {
	if err := oneOf("order", &order, "asc", "desc"); err != nil {
		return err
	}
	return intRange("limit", &limit, 1, MaxListLimit)
}
