package engine

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lib/pq"
)

// ClaimRef names a claim an agent holds.
type ClaimRef struct {
	TaskID  string
	Attempt int
	Token   string
}

// Heartbeat renews the leases of the agent's claims and returns the task
// ids it must cancel: claims no longer current (reaped, timed out) or of a
// job that failed (aborted).
func (e *Engine) Heartbeat(ctx context.Context, agentID string, claims []ClaimRef) ([]string, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	ids, attempts, tokens := make([]string, len(claims)), make([]int64, len(claims)), make([][]byte, len(claims))
	for i, c := range claims {
		ids[i], attempts[i], tokens[i] = c.TaskID, int64(c.Attempt), mustHex(c.Token)
	}
	var renewed []string
	err := e.db.SelectContext(ctx, &renewed, `WITH l AS MATERIALIZED (
			SELECT t.id FROM tasks t JOIN unnest($1::text[], $2::int[], $3::bytea[]) AS c(id, attempt, token) ON t.id = c.id
			WHERE t.attempt = c.attempt AND t.claim_token = c.token AND t.state = 'IN_PROGRESS' AND t.agent_id = $4
				AND (SELECT j.state FROM jobs j WHERE j.id = t.job_id) <> 'FAILED'
			ORDER BY t.id FOR UPDATE OF t)
		UPDATE tasks t SET lease_expires_at = now() + $5 * interval '1 millisecond' FROM l WHERE t.id = l.id
		RETURNING t.id`, pq.Array(ids), pq.Array(attempts), pq.ByteaArray(tokens), agentID, e.cfg.LeaseTTL.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("engine: heartbeat: %w", err)
	}
	ok := map[string]bool{}
	for _, id := range renewed {
		ok[id] = true
	}
	var cancel []string
	for _, c := range claims {
		if !ok[c.TaskID] {
			cancel = append(cancel, c.TaskID)
		}
	}
	return cancel, nil
}

// CheckClaim reports whether a claim is current: the attempt IN_PROGRESS
// under token. It returns the task's cluster.
func (e *Engine) CheckClaim(ctx context.Context, taskID string, attempt int, token string) (string, error) {
	tok, err := hex.DecodeString(token)
	if err != nil || len(tok) == 0 {
		return "", ErrStaleClaim
	}
	var cluster string
	err = e.db.GetContext(ctx, &cluster, `SELECT j.cluster_id FROM tasks t JOIN jobs j ON j.id = t.job_id
		WHERE t.id = $1 AND t.attempt = $2 AND t.claim_token = $3 AND t.state = 'IN_PROGRESS'`, taskID, attempt, tok)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrStaleClaim
	}
	return cluster, err
}
