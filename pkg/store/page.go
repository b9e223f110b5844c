package store

import (
	"github.com/lambent/lambent/pkg/api"
)

// PageItems returns one page of items (in stored order, oldest first) as
// ListInputItems defines it: Order "asc" or "desc" (default "desc"), After an
// item id to start after (unknown → InvalidCursorError), Limit 1..100
// (default 20, larger values clamped). The page's Items slice is new; the
// items themselves are shared with the argument.
func PageItems(items []api.Item, opts api.ListOptions) (*ItemPage, error) {
	limit, desc := opts.PageSize(), opts.Descending()
	n := len(items)
	// pos(i) is the index in items of the i-th element in listing order.
	pos := func(i int) int {
		if desc {
			return n - 1 - i
		}
		return i
	}
	start := 0
	if opts.After != "" {
		start = -1
		for i := 0; i < n; i++ {
			if items[pos(i)].ID == opts.After {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, InvalidCursorError(opts.After)
		}
	}
	end := min(start+limit, n)
	page := &ItemPage{Items: make([]api.Item, 0, end-start), HasMore: end < n}
	for i := start; i < end; i++ {
		page.Items = append(page.Items, items[pos(i)])
	}
	return page, nil
}
