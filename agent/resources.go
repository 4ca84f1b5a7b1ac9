package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cooprhq/coopr/drivers"
)

// resourceCache holds plugin resources fetched from the server
// (docs/task-protocol.md#plugin-resources), one file per content digest: a
// version is fetched once however many tasks want it at the same moment, and
// only bytes whose sha256 matches the payload's digest are kept.
type resourceCache struct {
	dir     string
	mu      sync.Mutex
	flights map[string]*flight // digest -> fetch under way
	fetches atomic.Int64       // fetches from the server, for tests
}

type flight struct {
	done chan struct{}
	path string
	err  error
}

func newResourceCache(dir string) *resourceCache {
	return &resourceCache{dir: dir, flights: map[string]*flight{}}
}

// digestHex is the hex of a "sha256:<hex>" digest, checked so it can name
// a file.
func digestHex(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	return strings.ToLower(h), nil
}

// get returns the cached file of r, fetching it under the task's claim
// when missing.
func (c *resourceCache) get(ctx context.Context, a *Agent, taskID, token string, r drivers.Resource) (string, error) {
	h, err := digestHex(r.Digest)
	if err != nil {
		return "", fmt.Errorf("resource %s/%s@%d: %w", r.ResourceType, r.Name, r.Version, err)
	}
	path := filepath.Join(c.dir, h)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	c.mu.Lock()
	f := c.flights[h]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.flights[h] = f
		c.mu.Unlock()
		f.path, f.err = c.fetch(ctx, a, taskID, token, r, h, path)
		c.mu.Lock()
		delete(c.flights, h)
		c.mu.Unlock()
		close(f.done)
	} else {
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if f.err != nil {
		return "", f.err
	}
	return f.path, nil
}

func (c *resourceCache) fetch(ctx context.Context, a *Agent, taskID, token string, r drivers.Resource, h, path string) (string, error) {
	what := fmt.Sprintf("resource %s/%s/%s/%s@%d", r.PluginType, r.Plugin, r.ResourceType, r.Name, r.Version)
	c.fetches.Add(1)
	var out struct {
		ResourceContent struct{ Content, Digest string }
	}
	err := a.do(ctx, `query($task: ID!, $tok: String!, $t: PluginType!, $p: String!, $rt: String!, $n: String!, $v: Int!) {
		resourceContent(taskId: $task, claimToken: $tok, pluginType: $t, plugin: $p, resourceType: $rt, name: $n, version: $v) { content digest } }`,
		map[string]any{"task": taskID, "tok": token, "t": strings.ToUpper(r.PluginType), "p": r.Plugin, "rt": r.ResourceType,
			"n": r.Name, "v": r.Version}, &out)
	if err != nil {
		return "", fmt.Errorf("%s: fetch: %w", what, err)
	}
	b, err := base64.StdEncoding.DecodeString(out.ResourceContent.Content)
	if err != nil {
		return "", fmt.Errorf("%s: content: %w", what, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != h {
		return "", fmt.Errorf("%s: digest mismatch: the payload says sha256:%s, the bytes are sha256:%s", what, h, got)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: cache: %w", what, err)
	}
	tmp, err := os.CreateTemp(c.dir, ".fetch-*")
	if err != nil {
		return "", fmt.Errorf("%s: cache: %w", what, err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("%s: cache: %w", what, werr)
	}
	return path, nil
}
