// Package webhook tells a tenant's HTTP endpoints of job and cluster state
// changes (docs/webhooks.md). Committed events become delivery rows in
// Postgres (an outbox), and a sender posts them, signed with the webhook's
// secret, retrying with backoff until the endpoint answers 2xx or the
// attempts run out. Delivery is at least once; each delivery carries an id
// to deduplicate by. Nothing here runs inside a job's path: a slow or dead
// endpoint delays only its own deliveries.
package webhook

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/audit"
)

// Event names a state change a webhook may ask for.
type Event string

// The events, as the payload's "event" and the X-Coopr-Event header give
// them.
const (
	JobStarted        Event = "job.started"
	JobSucceeded      Event = "job.succeeded"
	JobFailed         Event = "job.failed"
	ClusterActive     Event = "cluster.active"
	ClusterTerminated Event = "cluster.terminated"
)

// Events is every event, in documentation order.
var Events = []Event{JobStarted, JobSucceeded, JobFailed, ClusterActive, ClusterTerminated}

var (
	// ErrNotFound is a webhook the tenant does not have.
	ErrNotFound = errors.New("webhook not found")
	// ErrNoKey is a server without a credential key to seal secrets.
	ErrNoKey = errors.New("the server has no credential key (COOPR_CREDENTIAL_KEY) to seal webhook secrets")
)

// InputError is a refused field of a webhook.
type InputError struct {
	Field, Message string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Message }

// Sealer encrypts the webhooks' secrets under the server's credential key.
type Sealer interface {
	Enabled() bool
	Seal(plain, aad []byte) (nonce, sealed []byte, err error)
	Open(nonce, sealed, aad []byte) ([]byte, error)
}

// Service manages a server's webhooks and delivers their events.
type Service struct {
	db     *sqlx.DB
	sealer Sealer
	log    *slog.Logger
	// Client posts the deliveries; it must not follow redirects.
	Client *http.Client
	// Poll is how often the dispatcher and sender look for work.
	Poll time.Duration
	// MaxAttempts ends a delivery's retries: it is FAILED after that many.
	MaxAttempts int
	// Backoff is the wait after failed attempt n (1, 2, ...).
	Backoff func(n int) time.Duration
	// Parallel bounds the posts in flight.
	Parallel int
}

// New returns the webhook service over db.
func New(db *sqlx.DB, sealer Sealer, log *slog.Logger) *Service {
	return &Service{db: db, sealer: sealer, log: log,
		Client: &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Poll: 500 * time.Millisecond, MaxAttempts: 12, Backoff: Backoff, Parallel: 8}
}

// Backoff doubles from 2 s up to 10 minutes: twelve attempts span about
// an hour.
func Backoff(n int) time.Duration { return Doubling(2 * time.Second)(n) }

// Doubling waits first after the first failed attempt, doubling after each
// further one, up to 10 minutes.
func Doubling(first time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration {
		return min(first<<min(max(n-1, 0), 20), 10*time.Minute)
	}
}

// Webhook is a stored webhook; its secret is never read back.
type Webhook struct {
	ID        string         `db:"id"`
	URL       string         `db:"url"`
	Events    pq.StringArray `db:"events"`
	Template  string         `db:"template"`
	CreatedBy string         `db:"created_by"`
	CreatedAt time.Time      `db:"created_at"`
}

// Input is a webhook to create.
type Input struct {
	URL      string
	Events   []Event
	Template string // "" for every template
	Secret   string // "" makes one
}

// Create stores a webhook for tenant and returns it with its secret, the
// only time the secret is shown.
func (s *Service) Create(ctx context.Context, tenantID, createdBy string, in Input) (*Webhook, string, error) {
	if err := checkURL(in.URL); err != nil {
		return nil, "", err
	}
	if len(in.Events) == 0 {
		return nil, "", &InputError{"events", "name at least one event: " + eventList()}
	}
	for _, e := range in.Events {
		if !slices.Contains(Events, e) {
			return nil, "", &InputError{"events", fmt.Sprintf("unknown event %q: use %s", e, eventList())}
		}
	}
	secret := in.Secret
	switch {
	case secret == "":
		b := make([]byte, 32)
		_, _ = rand.Read(b) // crypto/rand.Read never fails
		secret = hex.EncodeToString(b)
	case len(secret) < 16 || len(secret) > 256:
		return nil, "", &InputError{"secret", fmt.Sprintf("must be 16 to 256 characters (got %d), or left out to have one made", len(secret))}
	}
	if s.sealer == nil || !s.sealer.Enabled() {
		return nil, "", ErrNoKey
	}
	events := make([]string, len(in.Events))
	for i, e := range in.Events {
		events[i] = string(e)
	}
	slices.Sort(events)
	events = slices.Compact(events)
	var w Webhook
	err := inTx(ctx, s.db, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &w.ID, `SELECT gen_random_uuid()`); err != nil {
			return err
		}
		nonce, sealed, err := s.sealer.Seal([]byte(secret), aad(tenantID, w.ID))
		if err != nil {
			return fmt.Errorf("webhook: seal secret: %w", err)
		}
		return tx.GetContext(ctx, &w, `INSERT INTO webhooks (id, tenant_id, url, events, template, secret_nonce, secret_sealed, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, url, events, template, created_by, created_at`,
			w.ID, tenantID, in.URL, pq.Array(events), in.Template, nonce, sealed, createdBy)
	})
	if err != nil {
		return nil, "", err
	}
	return &w, secret, nil
}

func aad(tenantID, id string) []byte { return []byte("webhook\x00" + tenantID + "\x00" + id) }

func eventList() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// checkURL takes absolute http and https URLs with a host and no
// credentials in them (the secret signs; a password in a URL would be
// shown in every listing).
func checkURL(raw string) error {
	if len(raw) > 2048 {
		return &InputError{"url", fmt.Sprintf("at most 2048 characters (got %d)", len(raw))}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &InputError{"url", fmt.Sprintf("not a URL: %v", err)}
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return &InputError{"url", fmt.Sprintf("%q: give an absolute http:// or https:// URL", raw)}
	}
	if u.User != nil {
		return &InputError{"url", "no user or password in the URL: the webhook's secret signs each delivery"}
	}
	return nil
}

// List returns the tenant's webhooks, oldest first.
func (s *Service) List(ctx context.Context, tenantID string) ([]Webhook, error) {
	ws := []Webhook{}
	err := s.db.SelectContext(ctx, &ws, `SELECT id, url, events, template, created_by, created_at FROM webhooks
		WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
	return ws, err
}

// Get returns one of the tenant's webhooks.
func (s *Service) Get(ctx context.Context, tenantID, id string) (*Webhook, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	var w Webhook
	err := s.db.GetContext(ctx, &w, `SELECT id, url, events, template, created_by, created_at FROM webhooks
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("webhook %s: %w", id, ErrNotFound)
	}
	return &w, err
}

// Delete removes a webhook and its delivery history.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	if !isUUID(id) {
		return fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook %s: %w", id, ErrNotFound)
	}
	return nil
}

// Delivery is one event's delivery to one webhook.
type Delivery struct {
	ID          string     `db:"id"`
	WebhookID   string     `db:"webhook_id"`
	Event       string     `db:"event"`
	Payload     []byte     `db:"payload"`
	State       string     `db:"state"`
	Attempts    int        `db:"attempts"`
	NextAt      time.Time  `db:"next_at"`
	LastStatus  *int       `db:"last_status"`
	LastError   string     `db:"last_error"`
	CreatedAt   time.Time  `db:"created_at"`
	DeliveredAt *time.Time `db:"delivered_at"`
}

// Deliveries returns a webhook's deliveries, newest first, at most limit
// of them, those created before the delivery before (a cursor) when it is
// given.
func (s *Service) Deliveries(ctx context.Context, tenantID, webhookID string, limit int, before string) ([]Delivery, error) {
	if _, err := s.Get(ctx, tenantID, webhookID); err != nil {
		return nil, err
	}
	if before != "" && !isUUID(before) {
		return nil, &InputError{"after", fmt.Sprintf("%q is not a delivery id from this list", before)}
	}
	ds := []Delivery{}
	err := s.db.SelectContext(ctx, &ds, `SELECT id, webhook_id, event, payload, state, attempts, next_at, last_status,
			last_error, created_at, delivered_at
		FROM webhook_deliveries d
		WHERE webhook_id = $1 AND ($2 = '' OR (created_at, event_id, id) <
			(SELECT created_at, event_id, id FROM webhook_deliveries WHERE id = $2::uuid))
		ORDER BY created_at DESC, event_id DESC, id DESC LIMIT $3`, webhookID, before, limit)
	return ds, err
}

// isUUID is an id in the form the database gives them; anything else
// names no webhook (and must not reach a uuid column as an error).
func isUUID(s string) bool { return len(s) == 36 && uuid.Validate(s) == nil }

func inTx(ctx context.Context, db *sqlx.DB, fn func(*sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	// A mutation's audit entry commits with its change (docs/audit.md).
	return audit.Commit(ctx, tx)
}
