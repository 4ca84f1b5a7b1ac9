package graph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/errkind"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/fleet"
	"github.com/cooprhq/coopr/server/webhook"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// Error codes in extensions.code.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeInvalidInput    = "INVALID_INPUT"
	CodeConflict        = "CONFLICT"
	CodeQuotaExceeded   = "QUOTA_EXCEEDED"
	CodeCapacity        = "CAPACITY_EXCEEDED"
	CodeInternal        = wire.CodeInternal
	// CodeNoCredentialKey is a request that needs a secret sealed or
	// opened on a server started without COOPR_CREDENTIAL_KEY.
	CodeNoCredentialKey = "NO_CREDENTIAL_KEY"
)

var (
	errUnauthenticated = errors.New("no valid API token: send \"Authorization: Bearer <token>\"; make one with `coopr token create`")
	errForbidden       = errors.New("forbidden")
)

// inputError is a bad argument, named by its path.
type inputError struct {
	field, message string
}

func (e *inputError) Error() string { return e.field + ": " + e.message }

func invalid(field, format string, a ...any) error {
	return &inputError{field: field, message: fmt.Sprintf(format, a...)}
}

// notFoundError is a missing object named by an argument's path.
type notFoundError struct {
	field, message string
}

func (e *notFoundError) Error() string { return e.field + ": " + e.message }

func notFound(field, format string, a ...any) error {
	return &notFoundError{field: field, message: fmt.Sprintf(format, a...)}
}

func forbidden(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errForbidden, fmt.Sprintf(format, a...))
}

// PresentError gives every error a code. Errors that are not the caller's
// doing are logged with a reference and shown only as that reference, so
// no internal detail (or secret) reaches a client.
func PresentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Extensions["code"] != nil {
			return gerr
		}
		out := graphql.DefaultErrorPresenter(ctx, err)
		code, ext := classify(err)
		if code == "" && errors.Is(err, context.Canceled) && ctx.Err() != nil {
			// The caller hung up (an agent stopping mid long poll): nobody
			// reads the answer and nothing went wrong here.
			log.DebugContext(ctx, "graphql: request cancelled by the client", "path", out.Path.String())
			code = "CANCELLED"
		}
		if code == "" {
			if gerr != nil && gerr.Err == nil {
				// gqlgen's own: parse and validation errors of the request.
				code = CodeInvalidInput
			} else {
				ref := make([]byte, 6)
				_, _ = rand.Read(ref)
				r := hex.EncodeToString(ref)
				log.ErrorContext(ctx, "graphql: internal error", "ref", r, "path", out.Path.String(), "err", clip(err.Error()))
				out.Message = "internal error (ref " + r + "); the server log has the details"
				code = CodeInternal
			}
		}
		// gqlgen's message for a body it cannot decode holds the whole body.
		out.Message = clip(out.Message)
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions["code"] = code
		for k, v := range ext {
			out.Extensions[k] = v
		}
		return out
	}
}

// maxErrorText bounds an error's message in answers and logs: none repeats
// a request's body.
const maxErrorText = 1024

// clip cuts s to maxErrorText bytes.
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes more)", len(s)-cut)
}

func classify(err error) (string, map[string]any) {
	var ie *inputError
	var nf *notFoundError
	var ve *catalog.ValidationError
	var ce *control.InputError
	var se *solver.Error
	var re *planner.RequestError
	var cy *planner.CycleError
	var mf *control.MissingFieldsError
	var capErr *control.CapacityError
	var hookErr *webhook.InputError
	switch {
	case errors.Is(err, errUnauthenticated):
		return CodeUnauthenticated, nil
	case errors.Is(err, errForbidden):
		return CodeForbidden, nil
	case errors.As(err, &ie):
		return CodeInvalidInput, map[string]any{"field": ie.field}
	case errors.As(err, &nf):
		return CodeNotFound, map[string]any{"field": nf.field}
	case errors.As(err, &ve):
		return CodeInvalidInput, map[string]any{"issues": issueList(ve.Issues)}
	case errors.As(err, &ce):
		return CodeInvalidInput, map[string]any{"field": ce.Field}
	case errors.As(err, &se):
		ext := map[string]any{"kind": string(se.Kind)}
		if len(se.Reasons) > 0 {
			// One line per problem, for a UI to list rather than split the message.
			ext["reasons"] = se.Reasons
		}
		return CodeInvalidInput, ext
	case errors.As(err, &re):
		return CodeInvalidInput, map[string]any{"field": re.Field}
	case errors.As(err, &cy):
		return CodeInvalidInput, map[string]any{"kind": "PLAN_CYCLE", "services": cy.Services}
	case errors.As(err, &mf):
		return "MISSING_FIELDS", map[string]any{"section": mf.Section, "missingFields": mf.Sets}
	case errors.Is(err, fleet.ErrUnknownAgent):
		return wire.CodeAgentUnknown, nil
	case errors.Is(err, fleet.ErrSlotNotAssigned):
		return wire.CodeSlotNotAssigned, nil
	case errors.Is(err, engine.ErrStaleClaim):
		return wire.CodeStaleClaim, nil
	case errors.As(err, &hookErr):
		return CodeInvalidInput, map[string]any{"field": hookErr.Field}
	case errors.Is(err, webhook.ErrNoKey), errors.Is(err, store.ErrNoKey):
		return CodeNoCredentialKey, nil
	case errors.Is(err, webhook.ErrNotFound):
		return CodeNotFound, nil
	case errors.As(err, &capErr):
		return CodeCapacity, map[string]any{"provider": capErr.Provider, "pool": capErr.Pool, "nodes": capErr.Nodes,
			"used": capErr.Used, "free": capErr.Free(), "requested": capErr.Requested}
	case errors.Is(err, control.ErrQuota):
		return CodeQuotaExceeded, nil
	case errors.Is(err, errkind.ErrNotFound):
		return CodeNotFound, nil
	case errors.Is(err, errkind.ErrConflict), errors.Is(err, errkind.ErrState):
		return CodeConflict, nil
	}
	return "", nil
}

func issueList(is catalog.Issues) []map[string]string {
	out := make([]map[string]string, len(is))
	for i, x := range is {
		out[i] = map[string]string{"path": x.Path, "message": x.Message, "severity": severity(x)}
	}
	return out
}

func severity(i catalog.Issue) string {
	if i.Severity == catalog.SeverityWarning {
		return "WARNING"
	}
	return "ERROR"
}
