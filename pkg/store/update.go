package store

import (
	"errors"
	"fmt"

	"github.com/lambent/lambent/pkg/api"
)

// UpdateAllowed reports whether Update may replace a record whose stored
// status is expect with one whose status is next: a legal transition of the
// state machine (api.CanTransition), or an unchanged non-terminal status (a
// progress checkpoint). A terminal record is never rewritten.
func UpdateAllowed(expect, next api.Status) bool {
	if expect == next {
		return !expect.Terminal() && expect.Valid()
	}
	return api.CanTransition(expect, next)
}

// CheckRecord returns an error when rec cannot be stored: no record, no
// response, no response id, or an unknown status.
func CheckRecord(rec *Record) error {
	switch {
	case rec == nil || rec.Response == nil:
		return errors.New("store: record without a response")
	case rec.Response.ID == "":
		return errors.New("store: response without an id")
	case !rec.Response.Status.Valid():
		return fmt.Errorf("store: response %s has unknown status %q", rec.Response.ID, rec.Response.Status)
	}
	return nil
}
