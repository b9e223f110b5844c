package store

import (
	"errors"
	"fmt"

	"github.com/lambent/lambent/pkg/api"
)

// More domain errors, next to ErrNotFound and ErrConflict.
var (
	// ErrInvalidCursor: api.ListOptions.After names no input item of the
	// response. The error returned with it also carries an *api.Error (400,
	// param "after"), so code that maps errors with errors.As answers the
	// client with a 400 rather than a 500.
	ErrInvalidCursor = errors.New("invalid pagination cursor")
	// ErrCorrupt: a stored record could not be decoded. It is the store's
	// fault, never the client's.
	ErrCorrupt = errors.New("stored response is unreadable")
)

// InvalidCursorError returns the error for an unknown api.ListOptions.After: it
// matches both ErrInvalidCursor (errors.Is) and an *api.Error with status
// 400 and param "after" (errors.As).
func InvalidCursorError(after string) error {
	return fmt.Errorf("%w: %w", ErrInvalidCursor,
		api.InvalidRequest("after", "No input item with id '%s' in this response.", after))
}
