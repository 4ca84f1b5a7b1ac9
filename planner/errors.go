package planner

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes, as the API reports them.
const (
	CodeInvalid = "INVALID_REQUEST"
	CodeCycle   = "PLAN_CYCLE"
)

// ErrCycle is matched (errors.Is) by every error about tasks or vertices
// that wait for each other.
var ErrCycle = errors.New("cycle")

// RequestError is a request the planner cannot plan; Field names the bad
// part of it.
type RequestError struct {
	Field   string
	Message string
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Message }

// Code is CodeInvalid.
func (e *RequestError) Code() string { return CodeInvalid }

// TaskRef names a task: node "" is the cluster, service "" the node.
type TaskRef struct {
	Node    string `json:"node"`
	Action  Action `json:"action"`
	Service string `json:"service"`
}

func (r TaskRef) String() string {
	s := r.Action.String()
	if r.Node != "" {
		s = r.Node + " " + s
	}
	if r.Service != "" {
		s += " " + r.Service
	}
	return s
}

// CycleError is services that depend on each other, or a plan whose tasks
// wait for each other. Services (or Tasks) is one cycle, each depending on
// (waiting for) the next and the last on the first.
type CycleError struct {
	Services []string // with Kind "install" or "runtime"
	Kind     string
	Tasks    []TaskRef
}

func (e *CycleError) Error() string {
	if len(e.Services) > 0 {
		return fmt.Sprintf("%s: services depend on each other in a cycle of %s dependencies: %s -> %s; remove one of these requires/uses",
			CodeCycle, e.Kind, strings.Join(e.Services, " -> "), e.Services[0])
	}
	parts := make([]string, len(e.Tasks)+1)
	for i, t := range e.Tasks {
		parts[i] = t.String()
	}
	if len(e.Tasks) > 0 {
		parts[len(e.Tasks)] = e.Tasks[0].String()
	}
	return fmt.Sprintf("%s: tasks wait for each other in a cycle (%s); check the runtime and install dependencies of the services named",
		CodeCycle, strings.Join(parts[:len(parts):len(parts)], " -> "))
}

// Code is CodeCycle.
func (e *CycleError) Code() string { return CodeCycle }

// Unwrap makes errors.Is(err, ErrCycle) true.
func (e *CycleError) Unwrap() error { return ErrCycle }
