package server

import (
	"context"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
)

func TestDocCacheBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	c := newDocCache(100, 40)
	doc := &ast.QueryDocument{}
	c.Add(ctx, "{ a }", doc)
	if _, ok := c.Get(ctx, "{ a }"); ok {
		t.Fatal("Add kept a document: only keep, after the limits, may")
	}
	c.keep(strings.Repeat("x", 41), doc)
	if c.Len() != 0 {
		t.Fatal("kept a document over the size of one")
	}
	for i := range 10 {
		c.keep(strings.Repeat(string(rune('a'+i)), 30), doc)
	}
	if c.Bytes() > 100 || c.Len() != 3 {
		t.Fatalf("%d documents of %d bytes kept, want 3 within 100", c.Len(), c.Bytes())
	}
	if _, ok := c.Get(ctx, strings.Repeat("j", 30)); !ok {
		t.Error("the newest document is gone")
	}
	if _, ok := c.Get(ctx, strings.Repeat("a", 30)); ok {
		t.Error("the oldest document is still there")
	}
	// Use keeps a document: h, i and j stay; touching h makes i the oldest.
	c.Get(ctx, strings.Repeat("h", 30))
	c.keep(strings.Repeat("k", 30), doc)
	if _, ok := c.Get(ctx, strings.Repeat("h", 30)); !ok {
		t.Error("the document just used was evicted")
	}
	if _, ok := c.Get(ctx, strings.Repeat("i", 30)); ok {
		t.Error("the least recently used document was kept")
	}
}
