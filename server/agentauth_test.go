package server_test

import (
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/servertest"
)

// Agent tokens are authenticated from a cache (an agent makes a request or
// more per task), which must not outlive a revocation: a revoked agent
// token is refused on its next request, on the server that revoked it at
// once and on every other as soon as Postgres tells it, however long the
// cache would otherwise keep the token (an hour here).
func TestRevokedAgentTokenIsRefusedAtOnce(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.AuthRecheckInterval = time.Hour
	a := servertest.StartWith(t, cfg)
	b := servertest.StartWith(t, a.Config)
	db := a.Srv.Store().DB()
	heartbeat := `mutation($in: AgentHeartbeatInput!) { agentHeartbeat(input: $in) { heartbeatIntervalSeconds } }`
	for _, tt := range []struct {
		name   string
		revoke func(t *testing.T, id string)
	}{
		{"revokeAPIToken", func(t *testing.T, id string) {
			a.Must(a.Super, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": id}, &struct{}{})
		}},
		{"revoked in the database", func(t *testing.T, id string) {
			if _, err := db.Exec(`UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted in the database", func(t *testing.T, id string) {
			if _, err := db.Exec(`DELETE FROM api_tokens WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tok struct {
				CreateAPIToken struct {
					Secret string
					Token  struct{ ID string }
				}
			}
			a.Must(a.Super, `mutation($n: String!) { createAPIToken(input: {name: $n, kind: AGENT, agents: "*"}) { secret token { id } } }`,
				map[string]any{"n": tt.name}, &tok)
			secret, id := tok.CreateAPIToken.Secret, tok.CreateAPIToken.Token.ID
			reg := map[string]any{"agentId": "a1", "incarnation": "i1", "capacity": 1}
			for _, s := range []*servertest.Server{a, b} {
				s.Must(secret, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
					map[string]any{"in": reg}, &struct{}{})
				// Twice: the second answer comes from the cache.
				s.Must(secret, heartbeat, map[string]any{"in": map[string]any{"agentId": "a1", "incarnation": "i1", "claims": []any{}}}, &struct{}{})
			}
			tt.revoke(t, id)
			hb := map[string]any{"in": map[string]any{"agentId": "a1", "incarnation": "i1", "claims": []any{}}}
			if tt.name == "revokeAPIToken" {
				// The revoking server knows before its answer.
				if r := a.Do(secret, heartbeat, hb); r.Code() != "UNAUTHENTICATED" {
					t.Fatalf("the revoking server's next request: %s %v, want UNAUTHENTICATED", r.Code(), r.Errors)
				}
			}
			for _, s := range []*servertest.Server{a, b} {
				deadline := time.Now().Add(5 * time.Second)
				for {
					r := s.Do(secret, heartbeat, hb)
					if r.Code() == "UNAUTHENTICATED" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("server %s still takes the token 5 s after it ended: %s %v", s.URL, r.Code(), r.Errors)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}
