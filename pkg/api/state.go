package api

import "fmt"

// Status is the lifecycle status of a response.
type Status string

// Response statuses. requires_action is Lambent's (the seeds') terminal
// status for a turn that waits on client-executed function calls.
const (
	StatusQueued         Status = "queued"
	StatusInProgress     Status = "in_progress"
	StatusCompleted      Status = "completed"
	StatusIncomplete     Status = "incomplete"
	StatusFailed         Status = "failed"
	StatusCancelled      Status = "cancelled"
	StatusRequiresAction Status = "requires_action"
)

// Terminal reports whether s has no outgoing transitions.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusIncomplete, StatusFailed, StatusCancelled, StatusRequiresAction:
		return true
	}
	return false
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	return s == StatusQueued || s == StatusInProgress || s.Terminal()
}

// CanTransition reports whether a response may move from one status to
// another. The empty status is the initial state.
func CanTransition(from, to Status) bool {
	switch from {
	case "":
		return to == StatusQueued || to == StatusInProgress
	case StatusQueued:
		return to == StatusInProgress || to == StatusCancelled || to == StatusFailed
	case StatusInProgress:
		return to.Terminal()
	}
	return false
}

// Transition returns an error when from → to is not allowed.
func Transition(from, to Status) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("illegal response status transition %q -> %q", from, to)
	}
	return nil
}
