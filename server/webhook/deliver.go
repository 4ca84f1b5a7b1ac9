package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Run dispatches and sends until ctx ends. Every server runs it: the
// dispatcher's watermark row and the sender's claims (SKIP LOCKED) keep
// servers from doing the same work twice. A database error is logged and
// retried at the next poll; only ctx ends it.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	for {
		if _, err := s.Dispatch(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("webhook: dispatch", "err", err)
		}
		if _, err := s.Send(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("webhook: send", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Dispatch turns the events committed since the last dispatch into
// deliveries, one per matching webhook, and moves the watermark past them
// in the same transaction: each event is enqueued once. It returns how
// many deliveries it made.
//
// The watermark is a transaction id, as the event relay's: events of every
// transaction older than the oldest one still running are final, so none
// is skipped for committing late.
func (s *Service) Dispatch(ctx context.Context) (int, error) {
	var n int
	err := inTx(ctx, s.db, func(tx *sqlx.Tx) error {
		var lo string
		// The row lock lets one server dispatch at a time.
		if err := tx.GetContext(ctx, &lo, `SELECT watermark::text FROM webhook_dispatch FOR UPDATE`); err != nil {
			return err
		}
		var hi string
		if err := tx.GetContext(ctx, &hi, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`); err != nil {
			return err
		}
		if hi == lo {
			return nil
		}
		res, err := tx.ExecContext(ctx, `
			WITH ev AS (
				SELECT e.id, e.tenant_id, e.cluster_id, e.job_id, e.state, e.message, e.created_at,
				       CASE WHEN e.kind = 'job' AND e.state = 'RUNNING' THEN 'job.started'
				            WHEN e.kind = 'job' AND e.state = 'COMPLETE' THEN 'job.succeeded'
				            WHEN e.kind = 'job' AND e.state = 'FAILED' THEN 'job.failed'
				            WHEN e.kind = 'cluster' AND e.state = 'ACTIVE' THEN 'cluster.active'
				            WHEN e.kind = 'cluster' AND e.state = 'TERMINATED' THEN 'cluster.terminated'
				       END AS event
				FROM events e
				WHERE e.txid >= $1::xid8 AND e.txid < $2::xid8 AND e.kind IN ('job', 'cluster'))
			INSERT INTO webhook_deliveries (webhook_id, event_id, event, payload)
			SELECT w.id, ev.id, ev.event, jsonb_build_object(
				'event', ev.event,
				'at', ev.created_at,
				'tenant', t.name,
				'cluster', jsonb_build_object('id', c.id, 'name', c.name, 'template', c.template, 'owner', c.owner),
				'job', CASE WHEN ev.job_id IS NULL THEN NULL
				            ELSE jsonb_build_object('id', j.id, 'action', j.action, 'state', ev.state, 'message', ev.message) END)
			FROM ev
			JOIN tenants t ON t.id = ev.tenant_id
			JOIN clusters c ON c.id = ev.cluster_id
			LEFT JOIN jobs j ON j.id = ev.job_id
			JOIN webhooks w ON w.tenant_id = ev.tenant_id AND ev.event = ANY (w.events)
			                AND (w.template = '' OR w.template = c.template)
			WHERE ev.event IS NOT NULL
			ON CONFLICT (webhook_id, event_id) DO NOTHING`, lo, hi)
		if err != nil {
			return fmt.Errorf("webhook: enqueue: %w", err)
		}
		m, _ := res.RowsAffected()
		n = int(m)
		_, err = tx.ExecContext(ctx, `UPDATE webhook_dispatch SET watermark = $1::xid8`, hi)
		return err
	})
	return n, err
}

// claimed is a delivery the sender took.
type claimed struct {
	ID        string `db:"id"`
	WebhookID string `db:"webhook_id"`
	TenantID  string `db:"tenant_id"`
	Event     string `db:"event"`
	Payload   []byte `db:"payload"`
	Attempts  int    `db:"attempts"`
	URL       string `db:"url"`
	Nonce     []byte `db:"secret_nonce"`
	Sealed    []byte `db:"secret_sealed"`
}

// claimLease is how long a claimed delivery is left to its sender before
// another may take it (a server that died mid-post).
const claimLease = time.Minute

// Send posts the deliveries that are due, Parallel at a time, and records
// each outcome. It returns how many it posted.
func (s *Service) Send(ctx context.Context) (int, error) {
	var due []claimed
	// Claiming pushes next_at out by the lease and counts the attempt, so
	// the post runs outside any transaction and a crash mid-post leaves the
	// delivery to be tried again.
	if err := s.db.SelectContext(ctx, &due, `
		UPDATE webhook_deliveries d SET next_at = now() + $1 * interval '1 second', attempts = d.attempts + 1
		FROM (SELECT id FROM webhook_deliveries WHERE state = 'PENDING' AND next_at <= now()
		      ORDER BY next_at LIMIT 100 FOR UPDATE SKIP LOCKED) due, webhooks w
		WHERE d.id = due.id AND w.id = d.webhook_id
		RETURNING d.id, d.webhook_id, w.tenant_id, d.event, d.payload, d.attempts, w.url, w.secret_nonce, w.secret_sealed`,
		claimLease.Seconds()); err != nil {
		return 0, fmt.Errorf("webhook: claim: %w", err)
	}
	sem := make(chan struct{}, max(s.Parallel, 1))
	var wg sync.WaitGroup
	for _, d := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			status, perr := s.post(ctx, d)
			if err := s.record(ctx, d, status, perr); err != nil && ctx.Err() == nil {
				s.log.Warn("webhook: record delivery", "delivery", d.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	return len(due), nil
}

// post sends one delivery; status is the endpoint's answer (0 without one).
func (s *Service) post(ctx context.Context, d claimed) (int, error) {
	secret, err := s.sealer.Open(d.Nonce, d.Sealed, aad(d.TenantID, d.WebhookID))
	if err != nil {
		return 0, fmt.Errorf("open the webhook's secret: %w", err)
	}
	body := d.Payload
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "coopr-webhook")
	req.Header.Set("X-Coopr-Event", d.Event)
	req.Header.Set("X-Coopr-Delivery", d.ID)
	req.Header.Set("X-Coopr-Timestamp", ts)
	req.Header.Set("X-Coopr-Signature", "sha256="+Sign(secret, ts, body))
	resp, err := s.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// A few bytes of a refusal say why; the rest is not ours to keep.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(head))
	}
	return resp.StatusCode, nil
}

// Sign is the hex HMAC-SHA256, under secret, of the timestamp, a dot and
// the body: what X-Coopr-Signature carries after "sha256=".
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// record stores a post's outcome: DELIVERED, PENDING again after the
// backoff, or FAILED when the attempts ran out.
func (s *Service) record(ctx context.Context, d claimed, status int, perr error) error {
	var st *int
	if status != 0 {
		st = &status
	}
	if perr == nil {
		_, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'DELIVERED', delivered_at = now(),
			last_status = $2, last_error = '' WHERE id = $1`, d.ID, st)
		return err
	}
	msg := perr.Error()
	if errors.Is(perr, context.DeadlineExceeded) {
		msg = "no answer within " + s.Client.Timeout.String()
	}
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	state, wait := "PENDING", s.Backoff(d.Attempts)
	if d.Attempts >= s.MaxAttempts {
		state = "FAILED"
	}
	_, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET state = $2, last_status = $3, last_error = $4,
		next_at = now() + $5 * interval '1 second' WHERE id = $1`, d.ID, state, st, msg, wait.Seconds())
	return err
}
