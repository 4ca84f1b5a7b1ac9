package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/server/webhook"
)

// receiver is an HTTP endpoint that refuses its first requests (down for a
// while), then records what it accepts.
type receiver struct {
	mu       sync.Mutex
	refuse   int
	refused  int
	accepted []received
}

type received struct {
	Event, Delivery, Timestamp, Signature string
	Body                                  []byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.refused < rc.refuse {
		rc.refused++
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	rc.accepted = append(rc.accepted, received{Event: r.Header.Get("X-Coopr-Event"), Delivery: r.Header.Get("X-Coopr-Delivery"),
		Timestamp: r.Header.Get("X-Coopr-Timestamp"), Signature: r.Header.Get("X-Coopr-Signature"), Body: body})
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.accepted...)
}

// A tenant's webhook hears of a cluster's create: its job starting and
// succeeding and the cluster becoming ACTIVE, each signed with the
// webhook's secret, retried while the endpoint is down, once per event.
func TestWebhookDeliveries(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) {
		c.CredentialKey, c.WebhookRetryWait = servertest.Key(), 50*time.Millisecond
	})
	rc := &receiver{refuse: 4}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	const secret = "a-secret-of-enough-length"

	var made struct {
		CreateWebhook struct {
			Webhook struct{ ID string }
			Secret  string
		}
	}
	w.s.Must(w.admin, `mutation($in: WebhookInput!) { createWebhook(input: $in) { webhook { id } secret } }`,
		map[string]any{"in": map[string]any{"url": hs.URL + "/hook", "events": []string{"JOB_STARTED", "JOB_SUCCEEDED", "CLUSTER_ACTIVE"},
			"secret": secret}}, &made)
	if made.CreateWebhook.Secret != secret {
		t.Errorf("created webhook's secret %q, want the one given", made.CreateWebhook.Secret)
	}
	hook := made.CreateWebhook.Webhook.ID
	// Another template's webhook hears nothing of this cluster.
	w.s.Must(w.admin, `mutation($in: WebhookInput!) { createWebhook(input: $in) { webhook { id } } }`,
		map[string]any{"in": map[string]any{"url": hs.URL + "/other", "events": []string{"CLUSTER_ACTIVE"}, "template": "hadoop"}}, &struct{}{})

	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.alice, `mutation { createCluster(input: {name: "hooked", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	w.run(t, w.alice, cr.CreateCluster.ID, "ACTIVE")

	type delivery struct {
		ID, Event, State, LastError string
		Attempts                    int
		LastStatus                  *int
	}
	var ds []delivery
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Webhook struct{ Deliveries []delivery }
		}
		w.s.Must(w.admin, `query($id: ID!) { webhook(id: $id) { deliveries(first: 50) { id event state attempts lastStatus lastError } } }`,
			map[string]any{"id": hook}, &out)
		ds = out.Webhook.Deliveries
		done := len(ds) == 3
		for _, d := range ds {
			done = done && d.State == "DELIVERED"
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries not all DELIVERED within 30 s: %+v", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
	retried := 0
	for _, d := range ds {
		if d.LastStatus == nil || *d.LastStatus != http.StatusNoContent || d.LastError != "" {
			t.Errorf("delivery %+v: want last status 204 and no error", d)
		}
		retried += d.Attempts - 1
	}
	if retried != rc.refuse {
		t.Errorf("%d retries recorded, the endpoint refused %d attempts", retried, rc.refuse)
	}

	got := rc.got()
	events := map[string]int{}
	for _, r := range got {
		events[r.Event]++
		if want := "sha256=" + webhook.Sign([]byte(secret), r.Timestamp, r.Body); r.Signature != want {
			t.Errorf("%s: signature %q, want %q", r.Event, r.Signature, want)
		}
		var p struct {
			Event   string
			Tenant  string
			Cluster struct{ ID, Name, Template string }
			Job     *struct{ ID, Action, State string }
		}
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Event != r.Event || p.Tenant != "acme" || p.Cluster.ID != cr.CreateCluster.ID || p.Cluster.Template != "lamp" {
			t.Errorf("payload %s", r.Body)
		}
		if strings.HasPrefix(p.Event, "job.") && (p.Job == nil || p.Job.Action != "CLUSTER_CREATE") {
			t.Errorf("job event without its job: %s", r.Body)
		}
	}
	for _, e := range []string{"job.started", "job.succeeded", "cluster.active"} {
		if events[e] != 1 {
			t.Errorf("%s delivered %d times, want once (%v)", e, events[e], events)
		}
	}
	if len(got) != 3 {
		t.Errorf("the endpoint accepted %d deliveries, want 3 (the other template's webhook hears nothing)", len(got))
	}
}

// Webhooks are the tenant admins'; a bad URL or event is refused naming the
// field.
func TestWebhookRefusals(t *testing.T) {
	w := newWorld(t)
	const create = `mutation($in: WebhookInput!) { createWebhook(input: $in) { webhook { id } } }`
	for _, tc := range []struct {
		name, token string
		in          map[string]any
		code, field string
	}{
		{"plain user", w.alice, map[string]any{"url": "https://example.com/h", "events": []string{"JOB_FAILED"}}, "FORBIDDEN", ""},
		{"not http", w.admin, map[string]any{"url": "ftp://example.com/h", "events": []string{"JOB_FAILED"}}, "INVALID_INPUT", "url"},
		{"password in url", w.admin, map[string]any{"url": "https://u:p@example.com/h", "events": []string{"JOB_FAILED"}}, "INVALID_INPUT", "url"},
		{"no events", w.admin, map[string]any{"url": "https://example.com/h", "events": []string{}}, "INVALID_INPUT", "events"},
		{"short secret", w.admin, map[string]any{"url": "https://example.com/h", "events": []string{"JOB_FAILED"}, "secret": "short"}, "INVALID_INPUT", "secret"},
	} {
		r := w.s.Do(tc.token, create, map[string]any{"in": tc.in})
		if r.Code() != tc.code {
			t.Errorf("%s: code %q, want %s (%v)", tc.name, r.Code(), tc.code, r.Errors)
			continue
		}
		if tc.field != "" && r.Errors[0].Extensions["field"] != tc.field {
			t.Errorf("%s: field %v, want %s", tc.name, r.Errors[0].Extensions["field"], tc.field)
		}
	}
	if r := w.s.Do(w.alice, `{ webhooks { id } }`, nil); r.Code() != "FORBIDDEN" {
		t.Errorf("plain user lists webhooks: %q", r.Code())
	}
	if r := w.s.Do(w.admin, `mutation { deleteWebhook(id: "00000000-0000-0000-0000-000000000000") }`, nil); r.Code() != "NOT_FOUND" {
		t.Errorf("delete of no webhook: %q", r.Code())
	}
}

// An endpoint that never answers 2xx gets its attempts, then the delivery
// is FAILED with the endpoint's last answer, and the cluster's job was not
// held up by it.
func TestWebhookGivesUp(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) {
		c.CredentialKey, c.WebhookRetryWait, c.WebhookAttempts = servertest.Key(), 20*time.Millisecond, 3
	})
	rc := &receiver{refuse: 1 << 30}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	var made struct {
		CreateWebhook struct{ Webhook struct{ ID string } }
	}
	w.s.Must(w.admin, `mutation($in: WebhookInput!) { createWebhook(input: $in) { webhook { id } } }`,
		map[string]any{"in": map[string]any{"url": hs.URL, "events": []string{"CLUSTER_ACTIVE"}}}, &made)
	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.alice, `mutation { createCluster(input: {name: "hooked", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	w.run(t, w.alice, cr.CreateCluster.ID, "ACTIVE")

	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Webhook struct {
				Deliveries []struct {
					State, LastError string
					Attempts         int
					LastStatus       *int
					NextAt           *time.Time
				}
			}
		}
		w.s.Must(w.admin, `query($id: ID!) { webhook(id: $id) { deliveries { state attempts lastStatus lastError nextAt } } }`,
			map[string]any{"id": made.CreateWebhook.Webhook.ID}, &out)
		if ds := out.Webhook.Deliveries; len(ds) == 1 && ds[0].State == "FAILED" {
			d := ds[0]
			if d.Attempts != 3 || d.LastStatus == nil || *d.LastStatus != 503 || !strings.Contains(d.LastError, "down for maintenance") || d.NextAt != nil {
				t.Errorf("failed delivery %+v: want 3 attempts, last status 503 with the endpoint's answer, no next attempt", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery not FAILED within 30 s: %+v", out.Webhook.Deliveries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
