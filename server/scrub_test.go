package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server/credentials"
)

const markerD = "MarkerDeltaNeverShown0004"

// Issue 17, point 5: a result's message and output tails were stored as
// the agent sent them, and output chunks were scrubbed of whole values
// only, so a sensitive value split between two chunks reached watchers.
// Every text an agent reports is scrubbed on the server of every sensitive
// value of the task's payload (here a sensitive provider field and the
// cluster's own key), also across chunks, before it is kept or shown.
func TestTaskTextIsScrubbed(t *testing.T) {
	w := newWorld(t)
	s := w.s
	ctx := context.Background()
	vaultCloud(t, w)
	token := "tok-" + markerD
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "v", "clusterTemplate": "lamp", "numMachines": 2, "providerFields": map[string]any{"token": token}}}, &cr)
	creds, err := credentials.New(s.Config.CredentialKey)
	if err != nil {
		t.Fatal(err)
	}
	all, err := creds.Get(ctx, s.Srv.Store().DB(), cr.CreateCluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := all["ssh"]["privateKey"].(string)
	var keyLines []string
	for _, l := range strings.Split(strings.TrimSpace(key), "\n") {
		if !strings.HasPrefix(l, "-----") {
			keyLines = append(keyLines, l)
		}
	}
	if len(keyLines) < 2 {
		t.Fatalf("the cluster's key %q: want a PEM block of several lines", key)
	}
	// leaks names the sensitive values (or pieces of them) in text.
	leaks := func(text string) []string {
		var out []string
		for _, v := range append([]string{token, markerD, markerD[:12], markerD[12:]}, keyLines...) {
			if strings.Contains(text, v) {
				out = append(out, v)
			}
		}
		return out
	}

	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("vault-cloud")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	type claim struct {
		TaskID, ClaimToken string
		Attempt            int
	}
	next := func() claim {
		t.Helper()
		var got struct{ ClaimTask *claim }
		for deadline := time.Now().Add(10 * time.Second); got.ClaimTask == nil && time.Now().Before(deadline); {
			s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1",
				"tenantId": w.tenantID, "slot": 0, "waitSeconds": 2}}, &got)
		}
		if got.ClaimTask == nil {
			t.Fatal("no task claimed")
		}
		return *got.ClaimTask
	}
	first := next()

	// The output, chunk by chunk, as a watcher sees it.
	logs, err := s.Subscribe(w.alice, `subscription($id: ID!) { taskLog(taskId: $id) { seq chunk } }`, map[string]any{"id": first.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		for {
			r, _, err := logs.Next(20 * time.Second)
			if err != nil {
				return
			}
			var l struct{ TaskLog struct{ Chunk string } }
			if r.Decode(&l) != nil {
				return
			}
			lines <- l.TaskLog.Chunk
		}
	}()
	seq := 0
	progress := func(chunk string) {
		t.Helper()
		seq++
		s.Must(agent, `mutation($in: ProgressInput!) { reportProgress(input: $in) }`, map[string]any{"in": map[string]any{
			"taskId": first.TaskID, "attempt": first.Attempt, "claimToken": first.ClaimToken, "seq": seq, "stream": "STDOUT",
			"chunk": chunk}}, &struct{}{})
	}
	// Nothing acknowledges a subscription: report until a line arrives.
	for ready := false; !ready; {
		progress("starting")
		select {
		case <-lines:
			ready = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The token cut in two, then the key line by line with a line cut in
	// two, then in three.
	cut := len("tok-") + 8
	chunks := []string{"logging in with " + token[:cut], token[cut:] + " ... ok", "the key:"}
	for i, l := range keyLines {
		switch i {
		case 0:
			chunks = append(chunks, l[:len(l)/2], l[len(l)/2:])
		case 1:
			chunks = append(chunks, l[:3], l[3:20], l[20:])
		default:
			chunks = append(chunks, l)
		}
	}
	for _, c := range append(chunks, "end of output") {
		progress(c)
	}
	var seen []string
	for l := range lines {
		if l == "starting" {
			continue
		}
		seen = append(seen, l)
		if l == "end of output" {
			break
		}
	}
	if out := strings.Join(seen, ""); len(leaks(out)) > 0 || !strings.Contains(out, "logging in with [redacted]") {
		t.Errorf("taskLog passed on %q: holds %q", seen, leaks(out))
	}

	// A failed attempt whose message and tails hold the values, whole and
	// cut at the tails' edges; then a success whose message holds one.
	s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": first.TaskID, "attempt": first.Attempt,
		"claimToken": first.ClaimToken, "result": map[string]any{"status": 1, "message": "login as " + token + " refused",
			"stdoutTail": token[6:] + "\nthe key was\n" + key, "stderrTail": "error near " + token[:14]}}}, &struct{}{})
	second := next()
	s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": second.TaskID, "attempt": second.Attempt,
		"claimToken": second.ClaimToken, "result": map[string]any{"status": 0, "message": "created with " + token,
			"stdoutTail": keyLines[0]}}}, &struct{}{})
	// A release's reason is the agent's text too.
	third := next()
	s.Must(agent, `mutation($in: ReleaseInput!) { releaseTask(input: $in) }`, map[string]any{"in": map[string]any{
		"taskId": third.TaskID, "attempt": third.Attempt, "claimToken": third.ClaimToken, "reason": "stopping; had " + token}}, &struct{}{})

	// Task.message and attempts.
	resp := s.Do(w.alice, `query($id: ID!) { cluster(id: $id) { jobs { message tasks { id message attempts { message stdoutTail stderrTail } } } } }`,
		map[string]any{"id": cr.CreateCluster.ID})
	if len(resp.Errors) > 0 {
		t.Fatal(resp.Errors)
	}
	answer := string(mustJSON(resp))
	if l := leaks(answer); len(l) > 0 {
		t.Errorf("the cluster's tasks show %q", l)
	}
	for _, want := range []string{"login as [redacted] refused", "created with [redacted]", "error near [redacted]"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the cluster's tasks do not show %q: %s", want, answer)
		}
	}
	// No row of any table (tasks, attempts, events...).
	noRowHolds(t, s, markerD, markerD[:12], markerD[12:])
	for _, l := range keyLines {
		noRowHolds(t, s, l)
	}
	// The Redis events stream, and every other key of the server's.
	opts, err := redis.ParseURL(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, s.Config.RedisPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	streams := 0
	for _, k := range keys {
		var text strings.Builder
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "stream":
			streams++
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				text.WriteString(string(mustJSON(m.Values)))
			}
		case "string":
			text.WriteString(rdb.Get(ctx, k).Val())
		case "hash":
			text.WriteString(string(mustJSON(rdb.HGetAll(ctx, k).Val())))
		case "list":
			text.WriteString(strings.Join(rdb.LRange(ctx, k, 0, -1).Val(), "\n"))
		case "zset", "set":
			text.WriteString(strings.Join(append(rdb.ZRange(ctx, k, 0, -1).Val(), rdb.SMembers(ctx, k).Val()...), "\n"))
		}
		if l := leaks(text.String()); len(l) > 0 {
			t.Errorf("Redis key %s holds %q", k, l)
		}
	}
	if streams == 0 {
		t.Errorf("no Redis stream among %v: the events stream was not checked", keys)
	}
}
