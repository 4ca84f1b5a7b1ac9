package errkind

import (
	"errors"
	"fmt"
	"testing"
)

// A labeled error keeps its wording and is its kind, and only its kind,
// through any wrapping.
func TestLabeled(t *testing.T) {
	kinds := []error{ErrNotFound, ErrConflict, ErrState}
	for _, kind := range kinds {
		err := fmt.Errorf("%w: job 7 is RUNNING", Labeled(kind, "CONFLICT"))
		if got, want := err.Error(), "CONFLICT: job 7 is RUNNING"; got != want {
			t.Errorf("message = %q, want %q", got, want)
		}
		for _, other := range kinds {
			if got, want := errors.Is(err, other), other == kind; got != want {
				t.Errorf("Labeled(%v) is %v: %v, want %v", kind, other, got, want)
			}
		}
	}
}
