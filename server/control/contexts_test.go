package control

import (
	"testing"
	"time"
)

// TestClaimContextsExpire: a cluster's claim context, which holds its
// decrypted secrets, is dropped once no claim has used it for the TTL
// (a deleted cluster claims no more), while one in use stays.
func TestClaimContextsExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cc := contextCache{now: func() time.Time { return now }}
	secret := map[string]map[string]any{"ns": {"password": "s3cret"}}
	cc.put("deleted", claimContext{key: "k1", secrets: secret})
	cc.put("busy", claimContext{key: "k2", secrets: secret})
	for _, tc := range []struct {
		advance      time.Duration
		cluster, key string
		want         bool
	}{
		{time.Minute, "deleted", "k1", true},
		{time.Minute, "deleted", "other", false}, // a changed key reads anew
		{5 * time.Minute, "busy", "k2", true},
		{5 * time.Minute, "busy", "k2", true},
		{5 * time.Minute, "busy", "k2", true},
		{0, "deleted", "k1", false}, // 16 minutes unused
	} {
		now = now.Add(tc.advance)
		if _, ok := cc.get(tc.cluster, tc.key); ok != tc.want {
			t.Fatalf("get %s %s after %s: %v, want %v", tc.cluster, tc.key, tc.advance, ok, tc.want)
		}
	}
	cc.put("new", claimContext{key: "k3"})
	if _, kept := cc.m["deleted"]; kept {
		t.Error("the unused context, with its secrets, is still kept")
	}
	if _, kept := cc.m["busy"]; !kept {
		t.Error("the context in use was dropped")
	}
}
