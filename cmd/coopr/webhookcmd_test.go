package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The webhook commands make, list and remove a webhook and show what it
// delivered, through a real server to a real endpoint.
func TestWebhookCommands(t *testing.T) {
	w := newCLIWorld(t)
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer hs.Close()

	out, errOut, code := w.cli(t, "webhook", "create", hs.URL+"/hook", "--events", "job.succeeded,cluster.active", "--template", "web-cluster")
	if code != 0 {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^webhook (\S+) created\nsecret: ([0-9a-f]{64})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create said %q", out)
	}
	id := m[1]
	if _, errOut, code := w.cli(t, "webhook", "create", "ftp://x", "--events", "job.failed"); code != 1 || !strings.Contains(errOut, "url") {
		t.Errorf("create with an ftp URL: exit %d, %q; want 1 naming url", code, errOut)
	}

	out, _, _ = w.cli(t, "webhook", "list")
	// The columns' widths follow the id and the endpoint's port.
	spaces := regexp.MustCompile(` {2,}`)
	golden(t, "webhook-list.txt", spaces.ReplaceAllString(strings.ReplaceAll(strings.ReplaceAll(out, id, "ID"), hs.URL, "URL"), "  "))
	out, _, _ = w.cli(t, "webhook", "list", "-o", "json")
	var listed []shownWebhook
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].ID != id ||
		strings.Join(listed[0].Events, ",") != "CLUSTER_ACTIVE,JOB_SUCCEEDED" {
		t.Errorf("list -o json: %v %s", err, out)
	}

	w.startAgent(t)
	w.await(t, w.create(t, "web-cluster", "demo", 3), "ACTIVE")
	deadline := time.Now().Add(30 * time.Second)
	var ds []shownDelivery
	for {
		out, _, _ = w.cli(t, "webhook", "deliveries", id, "-o", "json")
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Fatalf("deliveries -o json: %v: %s", err, out)
		}
		if len(ds) == 2 && ds[0].State == "DELIVERED" && ds[1].State == "DELIVERED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries not DELIVERED within 30 s: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if hits.Load() != 2 {
		t.Errorf("the endpoint got %d posts, want 2", hits.Load())
	}
	out, _, _ = w.cli(t, "webhook", "deliveries", id)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	golden(t, "webhook-deliveries.txt", stamps.ReplaceAllString(out, "YYYY-MM-DD hh:mm:ss"))

	if out, errOut, code := w.cli(t, "webhook", "delete", id); code != 0 {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := w.cli(t, "webhook", "list"); !strings.HasPrefix(out, "no webhooks") {
		t.Errorf("list after delete: %q", out)
	}
}
