// Package errkind holds the kinds of failure that cross package lines: the
// store, the engine and the control layer each wrap one of these with %w,
// and the API turns each kind into one error code (docs/api.md).
package errkind

import "errors"

// The kinds callers test for with errors.Is.
var (
	// ErrNotFound is an object that does not exist, or that the caller may
	// not see.
	ErrNotFound = errors.New("not found")
	// ErrConflict is an object that already exists.
	ErrConflict = errors.New("already exists")
	// ErrState is a change the object's current state does not allow.
	ErrState = errors.New("not allowed now")
)

// Labeled returns an error that reads label and is kind under errors.Is.
// A package whose messages have their own wording ("CONFLICT: job 7 is
// RUNNING") keeps it this way rather than defining another kind each caller
// must learn.
func Labeled(kind error, label string) error {
	return &labeled{label: label, kind: kind}
}

type labeled struct {
	label string
	kind  error
}

func (e *labeled) Error() string { return e.label }
func (e *labeled) Unwrap() error { return e.kind }
