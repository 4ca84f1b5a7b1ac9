// Package solver turns a cluster template, a provider and a size into a node
// layout (docs/solver.md): which services, hardware type and image type each
// node gets. It also adds services to, grows and shrinks a live layout. It is
// pure: no I/O, clock, randomness or globals, and the same input always gives
// the same output.
package solver

import (
	"fmt"
	"strings"
)

// Kind classifies a solver failure; the values are those `coopr solve`
// prints.
type Kind string

// Failure kinds.
const (
	KindNoHardwareType       Kind = "no_hardware_type"
	KindNoImageType          Kind = "no_image_type"
	KindIncompatibleServices Kind = "incompatible_services"
	KindUnknownService       Kind = "unknown_service"
	KindMissingDependency    Kind = "missing_dependency"
	KindConflict             Kind = "conflict"
	KindSizeConstraint       Kind = "size_constraint"
	KindNoLayout             Kind = "no_layout"
	KindBudgetExhausted      Kind = "budget_exhausted"
	KindInvalidCatalog       Kind = "invalid_catalog"
	KindInvalidInput         Kind = "invalid_input"
)

// Code is the error code of the kind (docs/concepts.md#error-codes).
func (k Kind) Code() string {
	switch k {
	case KindNoHardwareType:
		return "NO_HARDWARE_TYPE"
	case KindNoImageType:
		return "NO_IMAGE_TYPE"
	case KindIncompatibleServices:
		return "INCOMPATIBLE_SERVICES"
	case KindUnknownService:
		return "UNKNOWN_SERVICE"
	case KindMissingDependency:
		return "MISSING_DEPENDENCY"
	case KindConflict:
		return "SERVICE_CONFLICT"
	case KindNoLayout:
		return "LAYOUT_UNSATISFIABLE"
	case KindBudgetExhausted:
		return "SOLVER_BUDGET_EXCEEDED"
	case KindInvalidCatalog:
		return "TEMPLATE_INVALID"
	}
	return "INVALID_INPUT"
}

// Error is a typed solver failure. Reasons holds one line per problem when
// there are several (missing dependencies, unsatisfiable constraints).
type Error struct {
	Kind    Kind
	Message string
	Reasons []string
}

func (e *Error) Error() string { return e.Message }

// Code is the error code of the error's kind.
func (e *Error) Code() string { return e.Kind.Code() }

func errorf(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, a...)}
}

func errorLines(k Kind, lines []string) *Error {
	return &Error{Kind: k, Message: strings.Join(lines, "; "), Reasons: lines}
}
