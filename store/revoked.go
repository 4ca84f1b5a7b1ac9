package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// SessionKey names a session by the hex of its secret's hash, as the
// notification of its end does (migration 00022): it identifies the
// session without being able to authenticate as it.
func SessionKey(secret string) string { return hex.EncodeToString(hashToken(secret)) }

// StillValid reports which of tokens (ids) and sessions (SessionKey) still
// authenticate: the token unrevoked and not deleted; the session there, its
// token valid, not expired and used within idle. The check writes nothing:
// a websocket held open is not use of its session.
func (s *Store) StillValid(ctx context.Context, tokens, sessions []string, idle time.Duration) (validTokens, validSessions map[string]bool, err error) {
	validTokens, validSessions = map[string]bool{}, map[string]bool{}
	if len(tokens) > 0 {
		var ids []string
		if err := s.db.SelectContext(ctx, &ids, `SELECT id::text FROM api_tokens
			WHERE id::text = ANY($1) AND revoked_at IS NULL`, pq.Array(tokens)); err != nil {
			return nil, nil, fmt.Errorf("store: check tokens: %w", err)
		}
		for _, id := range ids {
			validTokens[id] = true
		}
	}
	if len(sessions) > 0 {
		hashes := make([][]byte, 0, len(sessions))
		for _, k := range sessions {
			if h, err := hex.DecodeString(k); err == nil {
				hashes = append(hashes, h)
			}
		}
		var keys []string
		if err := s.db.SelectContext(ctx, &keys, `SELECT encode(s.hash, 'hex') FROM sessions s
			JOIN api_tokens k ON k.id = s.token_id
			WHERE s.hash = ANY($1) AND k.revoked_at IS NULL AND s.expires_at > now()
				AND s.last_seen_at > now() - $2 * interval '1 microsecond'`,
			pq.ByteaArray(hashes), idle.Microseconds()); err != nil {
			return nil, nil, fmt.Errorf("store: check sessions: %w", err)
		}
		for _, k := range keys {
			validSessions[k] = true
		}
	}
	return validTokens, validSessions, nil
}
