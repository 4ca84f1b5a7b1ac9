package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Stop ends the claim fetchers, which run on the engine's own context:
// a claim waiting for a task returns ErrStopped at once, as does any
// claim made after, and Stop returns once the fetchers have.
func TestStopEndsWaitingClaims(t *testing.T) {
	h := newHarness(t, fast)
	eng := h.engine()
	res := make(chan error, 1)
	go func() {
		_, err := eng.Claim(context.Background(), ClaimRequest{TenantID: h.tenant, AgentID: "a", Wait: time.Hour})
		res <- err
	}()
	f := eng.fetcherFor(h.tenant)
	for waiting := false; !waiting; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		waiting = f.running && len(f.waiting) == 1
		f.mu.Unlock()
	}
	h.stop() // the scheduler first, as the server does
	eng.Stop()
	select {
	case err := <-res:
		if !errors.Is(err, ErrStopped) {
			t.Errorf("waiting claim: %v, want ErrStopped", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting claim did not end with Stop")
	}
	f.mu.Lock()
	running := f.running
	f.mu.Unlock()
	if running {
		t.Error("the fetcher still runs after Stop")
	}
	if _, err := eng.Claim(context.Background(), ClaimRequest{TenantID: h.tenant, AgentID: "a", Wait: time.Hour}); !errors.Is(err, ErrStopped) {
		t.Errorf("claim after Stop: %v, want ErrStopped", err)
	}
}
