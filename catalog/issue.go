package catalog

import (
	"fmt"
	"strings"
)

// Severity of an issue.
type Severity int

const (
	// SeverityError rejects the entity (and the import it is part of).
	SeverityError Severity = iota
	// SeverityWarning is reported but accepted.
	SeverityWarning
)

// Issue is one problem found in a catalog: where (file and JSON path) and what.
type Issue struct {
	File     string   `json:"file,omitempty"`
	Path     string   `json:"path,omitempty"`
	Message  string   `json:"message"`
	Severity Severity `json:"-"`
}

func (i Issue) String() string {
	var b strings.Builder
	if i.File != "" {
		b.WriteString(i.File)
		b.WriteString(": ")
	}
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(": ")
	}
	if i.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(i.Message)
	return b.String()
}

// Issues is a list of issues.
type Issues []Issue

// Errors returns only the errors.
func (is Issues) Errors() Issues { return is.filter(SeverityError) }

// Warnings returns only the warnings.
func (is Issues) Warnings() Issues { return is.filter(SeverityWarning) }

func (is Issues) filter(s Severity) Issues {
	var out Issues
	for _, i := range is {
		if i.Severity == s {
			out = append(out, i)
		}
	}
	return out
}

// HasErrors reports whether any issue is an error.
func (is Issues) HasErrors() bool { return len(is.Errors()) > 0 }

// Err returns a *ValidationError holding the errors, or nil if there are none.
func (is Issues) Err() error {
	if errs := is.Errors(); len(errs) > 0 {
		return &ValidationError{Issues: errs}
	}
	return nil
}

// ValidationError is returned when a catalog or entity has errors; it carries
// every one of them.
type ValidationError struct {
	Issues Issues
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.String()
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d errors:\n%s", len(lines), strings.Join(lines, "\n"))
}
