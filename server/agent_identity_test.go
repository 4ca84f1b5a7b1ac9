package server_test

import (
	"strings"
	"testing"
	"time"
)

// An agent token serves the agent ids it was made for: another agent's
// token cannot register under an agent's id (which would abandon that
// agent's claims), heartbeat or claim for it.
func TestAgentTokenBoundToItsIDs(t *testing.T) {
	w := newWorld(t)
	s := w.s
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 2}) { id } }`, nil, &struct{}{})
	token := func(agents string) string {
		var tok struct{ CreateAPIToken struct{ Secret string } }
		s.Must(s.Super, `mutation($a: String) { createAPIToken(input: {name: "t", kind: AGENT, agents: $a}) { secret } }`,
			map[string]any{"a": agents}, &tok)
		return tok.CreateAPIToken.Secret
	}
	own, web := token("agent-1"), token("web-*")
	const register = `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`
	reg := func(id string) map[string]any {
		return map[string]any{"in": map[string]any{"agentId": id, "incarnation": "inc-" + id, "capacity": 2,
			"drivers": lampDrivers("rackspace")}}
	}
	s.Must(own, register, reg("agent-1"), &struct{}{})
	s.Must(web, register, reg("web-3"), &struct{}{})

	// agent-1 holds a claim.
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "bound", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	claim := map[string]any{"agentId": "agent-1", "incarnation": "inc-agent-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 5}
	var got struct{ ClaimTask *assignment }
	for got.ClaimTask == nil {
		s.Must(own, claimQuery, map[string]any{"in": claim}, &got)
	}
	a := got.ClaimTask

	for _, c := range []struct {
		name, query string
		vars        map[string]any
	}{
		{"register as agent-1", register, reg("agent-1")},
		{"heartbeat as agent-1", `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-agent-1"}) { leaseTTLSeconds } }`, nil},
		{"claim as agent-1", claimQuery, map[string]any{"in": claim}},
	} {
		r := s.Do(web, c.query, c.vars)
		if r.Code() != "FORBIDDEN" || !strings.Contains(r.Errors[0].Message, `"agent-1"`) ||
			!strings.Contains(r.Errors[0].Message, `"web-*"`) || !strings.Contains(r.Errors[0].Message, "--agent-id agent-1") {
			t.Errorf("web-* token: %s: %+v, want FORBIDDEN naming the id, the token's pattern and the fix", c.name, r.Errors)
		}
	}
	// A session opened and dropped as agent-1 would fail its claims.
	sub, err := s.Subscribe(web, `subscription { agentSession(agentId: "agent-1", incarnation: "inc-agent-1") { graceSeconds } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := sub.Next(10 * time.Second)
	sub.Close()
	if err != nil || r.Code() != "FORBIDDEN" || !strings.Contains(r.Errors[0].Message, `"agent-1"`) {
		t.Errorf("web-* token: session as agent-1: %v %+v, want FORBIDDEN", err, r)
	}
	// The claim survived the attempts.
	result := map[string]any{"status": 0}
	if a.Payload.TaskName == "CONFIRM" {
		result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
	}
	s.Must(own, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
		"claimToken": a.ClaimToken, "result": result}}, &struct{}{})

	for _, c := range []struct {
		name, query, want string
	}{
		{"agent token without agents", `mutation { createAPIToken(input: {name: "x", kind: AGENT}) { secret } }`, "--name"},
		{"a bad pattern", `mutation { createAPIToken(input: {name: "x", kind: AGENT, agents: "web 1"}) { secret } }`, "not allowed"},
		{"a user token with agents", `mutation { createAPIToken(input: {name: "x", agents: "web-1"}) { secret } }`, "only agent tokens"},
	} {
		if r := s.Do(s.Super, c.query, nil); r.Code() != "INVALID_INPUT" || !strings.Contains(r.Errors[0].Message, c.want) {
			t.Errorf("%s: %+v, want INVALID_INPUT mentioning %q", c.name, r.Errors, c.want)
		}
	}
	var list struct {
		APITokens []struct {
			Kind   string
			Agents *string
		}
	}
	s.Must(s.Super, `{ apiTokens { kind agents } }`, nil, &list)
	var patterns []string
	for _, tk := range list.APITokens {
		if tk.Kind == "AGENT" && tk.Agents != nil {
			patterns = append(patterns, *tk.Agents)
		}
	}
	if strings.Join(patterns, ",") != "web-*,agent-1" && strings.Join(patterns, ",") != "agent-1,web-*" {
		t.Errorf("agent tokens list agents %q", patterns)
	}
}
