// Package queuetest gives tests a client for the test Redis and a key
// prefix of their own, removed when the test ends.
package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvURL names the variable holding the test Redis URL.
const EnvURL = "COOPR_TEST_REDIS_URL"

// DefaultURL is used when EnvURL is unset: the CI machine's Redis.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL is the test Redis: $COOPR_TEST_REDIS_URL, else DefaultURL.
func URL() string {
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	return DefaultURL
}

// New returns a client and a unique prefix. An unreachable Redis fails the
// test: CI guarantees one, so a skip would only hide a broken setup. Keys
// under the prefix are deleted at cleanup; tests share the server, so
// nothing else is.
func New(t testing.TB) (*redis.Client, string) {
	t.Helper()
	url := URL()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("queuetest: %s: %v", EnvURL, err)
	}
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		t.Fatalf("queuetest: cannot reach the test Redis at %s (set %s): %v", opts.Addr, EnvURL, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "cooprtest-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		defer rdb.Close()
		iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("queuetest: cleanup of %s: %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("queuetest: cleanup scan of %s:*: %v", prefix, err)
		}
	})
	return rdb, prefix
}
