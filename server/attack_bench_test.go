package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// The attacks of docs/api.md's Limits, each measured per request: time,
// bytes allocated, and the heap's peak above its live size before (or,
// for documents a server might keep, what is still live after a forced
// collection). Run them one at a time on an idle machine:
//
//	go test -run '^$' -bench Attack -benchtime 1x ./server/
//
// The numbers include the in-process client's own work, which is small
// beside the server's here.

// aliases is a query of n aliased copies of field.
func aliases(n int, field string) string {
	var q strings.Builder
	q.WriteString("{")
	for i := range n {
		fmt.Fprintf(&q, " a%d: %s", i, field)
	}
	q.WriteString(" }")
	return q.String()
}

// measureRequests runs do b.N times, one after another, and reports time,
// allocation and heap peak per request, with the code of the last
// response's first error ("" when it had none).
func measureRequests(b *testing.B, do func() (*servertest.Response, error)) {
	b.Helper()
	var peak uint64
	var code string
	_, before := heap()
	b.ResetTimer()
	for range b.N {
		p := watchHeap()
		r, err := do()
		peak = max(peak, p.Stop())
		if err != nil {
			b.Fatal(err)
		}
		code = r.Code()
	}
	b.StopTimer()
	_, after := heap()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/req")
	b.ReportMetric(float64(after-before)/float64(b.N)/(1<<20), "MB-alloc/req")
	b.ReportMetric(float64(peak)/(1<<20), "MB-peak-heap")
	b.Logf("%d requests; last answered %q", b.N, code)
}

// BenchmarkAttackComplexity (issue 17, point 1). issue-17: a plain user
// with 20 clusters asks for the clusters' jobs' tasks through as many
// aliases of clusters(first: 500) as the old complexity limit let through
// (each weighed 5, whatever first said): one database query per cluster
// and per job, for every alias. The other cases are the costliest queries
// of their kind that the default limit admits (docs/api.md, Limits), each
// as many aliases as fit: the figure the limit is calibrated by.
func BenchmarkAttackComplexity(b *testing.B) {
	w := newAttackWorld(b, 20, func(c *server.Config) { c.RateLimit = 0 })
	// A 12-node cluster: its create has about 100 tasks, more than a
	// job's estimated 50, and 20 clusters with 60 kB configs.
	var big struct {
		CreateCluster struct{ LatestJob struct{ ID string } }
	}
	w.s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { latestJob { id } } }`,
		map[string]any{"in": map[string]any{"name": "big", "clusterTemplate": "web-cluster", "numMachines": 12}}, &big)
	job := big.CreateCluster.LatestJob.ID
	pad := strings.Repeat("x", 1000)
	config := map[string]any{}
	for i := range 60 {
		config[fmt.Sprintf("k%d", i)] = pad
	}
	for range 20 {
		w.s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"name": "configured", "clusterTemplate": "web-cluster", "numMachines": 2,
				"config": config}}, &struct{}{})
	}
	const task = "id nodeId hostname action service stage state attempt failures maxAttempts message"
	const cluster = "id name description owner status message template provider services size dnsSuffix expireTime createdAt updatedAt"
	typenames := strings.TrimPrefix(strings.TrimSuffix(aliases(200, "__typename"), "}"), "{")
	cases := []struct{ name, query string }{
		{"issue-17", aliases(2000, "clusters(first: 500) { nodes { jobs { tasks { id } } } }")},
		// 160 × (51 + 20 × (1 + 1 + 14)) = 59,360: 3,200 clusters' 14 fields.
		{"fields", aliases(160, "clusters(first: 20) { nodes { "+cluster+" } }")},
		// 53 × (51 + 20 × (1 + 1 + 51 + 1)) = 59,943: 1,060 reads.
		{"reads", aliases(53, "clusters(first: 20) { nodes { latestJob { id } } }")},
		// 85 × (51 + 51 + 50 × (1 + 11)) = 59,670 estimated; the job has
		// about 100 tasks, so the meter stops it at 60,000.
		{"tasks", aliases(85, `job(id: "`+job+`") { tasks { `+task+` } }`)},
		// 20 × (51 + 51 + 50 × (1 + 51 + 2 × (1 + 1))) = 58,040 estimated;
		// a read per task, stopped by the meter at 60,000.
		{"attempts", aliases(20, `job(id: "`+job+`") { tasks { attempts { attempt } } }`)},
		// 39 × (51 + 20 × (1 + 1 + 71)) = 58,929 estimated: a read per
		// config (lists leave them out); 60 kB configs are charged 240
		// each, stopped by the meter at 60,000.
		{"json", aliases(39, "clusters(first: 20) { nodes { config } }")},
		// 200 × (51 + 200) = 50,200: selection sets as large as allowed,
		// through a fragment (the document stays under 64 KiB).
		{"selections", "query " + aliases(200, "me { ...F }") + " fragment F on Principal { " + typenames + " }"},
		// 59 × (1,001 + 1) = 59,118: previews of a 10-node cluster.
		{"mutations", "mutation " + aliases(59, `previewCluster(input: {name: "p", clusterTemplate: "web-cluster", numMachines: 10}) { planHash }`)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			measureRequests(b, func() (*servertest.Response, error) { return w.s.Request(w.alice, c.query, nil) })
		})
	}
}

// BenchmarkAttackAnonymousDocuments (issue 17, point 2): 2 MB documents of
// 100,000 __typename aliases, each different, sent without a token.
// retained-MB is what the server still holds after b.N of them and a
// forced collection.
func BenchmarkAttackAnonymousDocuments(b *testing.B) {
	w := newAttackWorld(b, 0, nil)
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i], _ = json.Marshal(map[string]any{"query": aliases(100_000, "__typename") + strings.Repeat(" ", i)})
	}
	base := liveHeap()
	n := 0
	measureRequests(b, func() (*servertest.Response, error) {
		resp, err := http.Post(w.s.URL+"/graphql", "application/json", bytes.NewReader(bodies[n]))
		n++
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r servertest.Response
		return &r, json.NewDecoder(resp.Body).Decode(&r)
	})
	bodies = nil
	after := liveHeap()
	b.ReportMetric(float64(after-min(after, base))/(1<<20), "retained-MB")
}

// BenchmarkAttackSubscribeFlood (issue 17, point 3): one websocket of a
// plain user sends COOPR_BENCH_FLOOD (default 2,000) subscribe messages
// as fast as it can. Reports how long the server took to answer them all,
// how many it accepted (a next message, not an error), and the goroutines
// and live heap the open connection holds per subscribe sent.
func BenchmarkAttackSubscribeFlood(b *testing.B) {
	flood := 2000
	if n, err := strconv.Atoi(os.Getenv("COOPR_BENCH_FLOOD")); err == nil {
		flood = n
	}
	w := newAttackWorld(b, 1, func(c *server.Config) { c.RateLimit = 50 })
	var accepted int
	var goroutines, held float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// A fresh token each time: the flood of one iteration does not
		// spend the rate of the next.
		var tok struct{ CreateAPIToken struct{ Secret string } }
		w.s.Must(w.admin, `mutation { createAPIToken(input: {name: "flood", user: "alice"}) { secret } }`, nil, &tok)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c, err := dialReader(ctx, w.s.URL, false)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.writeJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + tok.CreateAPIToken.Secret}}); err != nil {
			b.Fatal(err)
		}
		if m, err := c.read(); err != nil || !bytes.Contains(m, []byte("connection_ack")) {
			b.Fatalf("init: %s %v", m, err)
		}
		g0, h0 := runtime.NumGoroutine(), liveHeap()
		b.StartTimer()
		go func() {
			for i := range flood {
				_ = c.writeJSON(map[string]any{"id": strconv.Itoa(i), "type": "subscribe", "payload": map[string]any{
					"query":     `subscription($id: ID!) { clusterEvents(clusterId: $id) { kind cluster { status } } }`,
					"variables": map[string]any{"id": w.clusters[0]}}})
			}
		}()
		answered := map[string]bool{}
		accepted = 0
		for len(answered) < flood {
			_ = c.conn.SetReadDeadline(time.Now().Add(time.Minute))
			m, err := c.read()
			if err != nil {
				b.Fatalf("after %d answers: %v", len(answered), err)
			}
			var id string
			if i := bytes.Index(m, []byte(`"id":"`)); i >= 0 {
				rest := m[i+6:]
				id = string(rest[:bytes.IndexByte(rest, '"')])
			}
			if id == "" || answered[id] {
				continue
			}
			answered[id] = true
			if bytes.Contains(m, []byte(`"type":"next"`)) && !bytes.Contains(m, []byte(`"errors"`)) {
				accepted++
			}
		}
		b.StopTimer()
		goroutines += float64(runtime.NumGoroutine()-g0) / float64(flood)
		h := liveHeap()
		held += float64(h-min(h, h0)) / float64(flood)
		c.Close()
		cancel()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/flood")
	b.ReportMetric(float64(accepted), "accepted")
	b.ReportMetric(goroutines/float64(b.N), "goroutines/subscribe")
	b.ReportMetric(held/float64(b.N)/1024, "KB-held/subscribe")
}
