package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	acme, err := s.EnsureTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, acme.ID, "alice", store.RoleUser); err != nil {
		t.Fatal(err)
	}
	_, tok, err := s.CreateToken(ctx, acme.ID, "alice", store.TokenUser, "ui")
	if err != nil {
		t.Fatal(err)
	}
	const lifetime, idle = 24 * time.Hour, time.Hour
	newSession := func(t *testing.T) string {
		t.Helper()
		secret, sess, err := s.CreateSession(ctx, tok.ID, lifetime, idle)
		if err != nil {
			t.Fatal(err)
		}
		if sess.User != "alice" || sess.TenantName != "acme" || sess.Role != store.RoleUser || sess.TokenID != tok.ID ||
			time.Until(sess.ExpiresAt) < lifetime-time.Minute || time.Until(sess.ExpiresAt) > lifetime {
			t.Fatalf("new session = %+v", sess)
		}
		return secret
	}
	ended := func(t *testing.T, secret, why string) {
		t.Helper()
		if _, err := s.Session(ctx, secret, idle); !errors.Is(err, store.ErrUnauthenticated) {
			t.Errorf("%s: Session = %v, want ErrUnauthenticated", why, err)
		}
	}
	exec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	hashOf := `sha256(convert_to($1, 'UTF8'))`

	t.Run("lookup", func(t *testing.T) {
		secret := newSession(t)
		got, err := s.Session(ctx, secret, idle)
		if err != nil || got.User != "alice" || got.TokenID != tok.ID {
			t.Fatalf("Session = %+v, %v", got, err)
		}
		ended(t, secret+"x", "another secret")
		ended(t, "", "no secret")
	})
	t.Run("idle", func(t *testing.T) {
		secret := newSession(t)
		exec(t, `UPDATE sessions SET last_seen_at = now() - interval '59 minutes' WHERE hash = `+hashOf, secret)
		if _, err := s.Session(ctx, secret, idle); err != nil {
			t.Fatalf("used 59 minutes ago, idle timeout an hour: %v", err)
		}
		// That use counted: the session is fresh again.
		var fresh bool
		if err := s.DB().GetContext(ctx, &fresh, `SELECT last_seen_at > now() - interval '1 minute' FROM sessions WHERE hash = `+hashOf, secret); err != nil || !fresh {
			t.Fatalf("last_seen_at not renewed by a use (%v)", err)
		}
		exec(t, `UPDATE sessions SET last_seen_at = now() - interval '61 minutes' WHERE hash = `+hashOf, secret)
		ended(t, secret, "unused for longer than the idle timeout")
	})
	t.Run("lifetime", func(t *testing.T) {
		secret := newSession(t)
		exec(t, `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE hash = `+hashOf, secret)
		ended(t, secret, "past its lifetime, though used just now")
	})
	t.Run("end", func(t *testing.T) {
		secret := newSession(t)
		if err := s.EndSession(ctx, secret); err != nil {
			t.Fatal(err)
		}
		ended(t, secret, "ended")
		if err := s.EndSession(ctx, secret); err != nil {
			t.Errorf("ending an ended session: %v", err)
		}
	})
	t.Run("ended sessions are removed at the next sign-in", func(t *testing.T) {
		old := newSession(t)
		exec(t, `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE hash = `+hashOf, old)
		newSession(t)
		var n int
		if err := s.DB().GetContext(ctx, &n, `SELECT count(*) FROM sessions WHERE hash = `+hashOf, old); err != nil || n != 0 {
			t.Errorf("expired session still stored (%d rows, %v)", n, err)
		}
	})
	t.Run("revoking the token ends its sessions", func(t *testing.T) {
		_, tok2, err := s.CreateToken(ctx, acme.ID, "alice", store.TokenUser, "ui-2")
		if err != nil {
			t.Fatal(err)
		}
		secret, _, err := s.CreateSession(ctx, tok2.ID, lifetime, idle)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeToken(ctx, acme.ID, "", tok2.ID); err != nil {
			t.Fatal(err)
		}
		ended(t, secret, "token revoked")
		if _, _, err := s.CreateSession(ctx, tok2.ID, lifetime, idle); !errors.Is(err, store.ErrUnauthenticated) {
			t.Errorf("session of a revoked token: %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("agent tokens get no session", func(t *testing.T) {
		sup, err := s.Tenant(ctx, store.SuperadminTenant)
		if err != nil {
			t.Fatal(err)
		}
		_, agent, err := s.CreateAgentToken(ctx, sup.ID, "agent", "*")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateSession(ctx, agent.ID, lifetime, idle); !errors.Is(err, store.ErrUnauthenticated) {
			t.Errorf("session of an agent token: %v, want ErrUnauthenticated", err)
		}
	})
	t.Run("deleting the tenant ends its sessions", func(t *testing.T) {
		other, err := s.EnsureTenant(ctx, "gone")
		if err != nil {
			t.Fatal(err)
		}
		_, tok3, err := s.CreateToken(ctx, other.ID, "admin", store.TokenUser, "ui")
		if err != nil {
			t.Fatal(err)
		}
		secret, _, err := s.CreateSession(ctx, tok3.ID, lifetime, idle)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, `DELETE FROM tenants WHERE id = $1`, other.ID)
		ended(t, secret, "tenant deleted")
		var n int
		if err := s.DB().GetContext(ctx, &n, `SELECT count(*) FROM sessions WHERE token_id = $1`, tok3.ID); err != nil || n != 0 {
			t.Errorf("sessions of a deleted tenant's token still stored (%d rows, %v)", n, err)
		}
	})
}
