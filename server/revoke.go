package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// watchAuth ends this server's websockets whose token or web UI session
// stopped being valid (docs/security.md#ending-access). Postgres tells every
// server at once, at commit, of a token revoked or deleted and of a session
// deleted (migration 00022); every AuthRecheckInterval, and whenever the
// listening connection was lost (notifications may have been missed), the
// server also asks the database about every token and session its
// websockets hold, which finds the rest: expired and idle sessions.
func (s *Server) watchAuth(ctx context.Context) error {
	var schema string
	if err := s.store.DB().GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("auth watch: %w", err)
	}
	l := pq.NewListener(s.cfg.DatabaseURL, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && ctx.Err() == nil {
			s.log.Warn("auth watch: listener", "event", ev, "err", err)
		}
	})
	defer l.Close()
	if err := l.Listen("coopr_auth_" + schema); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("auth watch: listen: %w", err)
	}
	// This server took websockets before it listened: an end notified in
	// between reached it not, and the tick is seconds away.
	s.recheckAuth(ctx)
	tick := time.NewTicker(s.cfg.AuthRecheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.Notify:
			if n == nil {
				// The connection was lost and made again: revocations
				// may have been missed.
				s.agentAuth.ForgetAll()
				s.recheckAuth(ctx)
				continue
			}
			s.authEnded(n.Extra)
		case <-tick.C:
			s.recheckAuth(ctx)
		}
	}
}

// authEnded ends the websockets of a notification's token or session.
func (s *Server) authEnded(payload string) {
	kind, id, _ := strings.Cut(payload, ":")
	if kind != "token" && kind != "session" {
		return
	}
	if kind == "token" {
		s.agentAuth.Forget(id)
	}
	if n := s.sockets.end(payload); n > 0 {
		s.log.Info("websockets ended: their "+kind+" is no longer valid", "websockets", n)
	}
}

// recheckAuth ends the websockets whose token or session the database no
// longer finds valid.
func (s *Server) recheckAuth(ctx context.Context) {
	tokens, sessions := s.sockets.keys()
	if len(tokens) == 0 && len(sessions) == 0 {
		return
	}
	validTokens, validSessions, err := s.store.StillValid(ctx, tokens, sessions, s.cfg.SessionIdleTimeout)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("auth watch: re-check", "err", err)
		}
		return
	}
	for _, id := range tokens {
		if !validTokens[id] {
			s.authEnded(tokenKey(id))
		}
	}
	for _, k := range sessions {
		if !validSessions[k] {
			s.authEnded(sessionKey(k))
		}
	}
}
