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
	// ErrTooLarge: a record is larger than the store keeps (see
	// TooLargeError and SizeChecker).
	ErrTooLarge = errors.New("response too large to store")
	// ErrPartlyDeleted: a delete removed the record (a response, a
	// conversation), which nobody reads from then on, but not every part
	// of it: what remains expires with it. The delete itself succeeded.
	ErrPartlyDeleted = errors.New("deleted, but some parts remain until they expire")
	// ErrLeaseLost: a claimed append (ClaimedEventLog) found the response
	// under another claim than the caller's: another worker took its
	// lease over, and the caller must stop writing.
	ErrLeaseLost = errors.New("the lease of the background response is another worker's")
)

// TooLargeError is the error of a record larger than a store keeps. It
// matches ErrTooLarge (errors.Is).
type TooLargeError struct {
	// Size is the record's size as the store measures it, Limit the most
	// it keeps, both in bytes.
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%v: %d bytes, more than the limit of %d bytes", ErrTooLarge, e.Size, e.Limit)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// SizeChecker is implemented by stores that bound the size of one record,
// so that a caller can learn before costly work that its record would be
// refused.
type SizeChecker interface {
	// CheckSize returns a *TooLargeError when rec is larger than the store
	// keeps in one record; nil when it fits.
	CheckSize(rec *Record) error
}

// InvalidCursorError returns the error for an unknown api.ListOptions.After: it
// matches both ErrInvalidCursor (errors.Is) and an *api.Error with status
// 400 and param "after" (errors.As).
func InvalidCursorError(after string) error {
	return fmt.Errorf("%w: %w", ErrInvalidCursor,
		api.InvalidRequest("after", "No input item with id '%s' in this response.", after))
}
