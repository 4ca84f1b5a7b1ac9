package server

import (
	"container/list"
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// docCache keeps parsed and validated documents, agents' and UIs' few
// documents sent over and over, so that each is parsed once. A parsed
// document takes about twenty times its text in memory, so the cache is
// bounded by the text it holds, and a document enters it only once its
// request has passed every limit (keep, run after them): one refused for
// its cost, or sent by someone who was then refused, is not kept.
type docCache struct {
	maxBytes, maxDoc int

	mu    sync.Mutex
	bytes int
	order *list.List // of *docEntry, most recently used first
	byKey map[string]*list.Element
}

type docEntry struct {
	key string
	doc *ast.QueryDocument
}

// Documents of at most maxDoc bytes of text are kept, maxBytes in all.
func newDocCache(maxBytes, maxDoc int) *docCache {
	return &docCache{maxBytes: maxBytes, maxDoc: maxDoc, order: list.New(), byKey: map[string]*list.Element{}}
}

var _ graphql.Cache[*ast.QueryDocument] = (*docCache)(nil)

func (c *docCache) Get(_ context.Context, key string) (*ast.QueryDocument, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*docEntry).doc, true
}

// Add does nothing: gqlgen calls it as soon as a document validates,
// before the limits have looked at it. keep adds.
func (c *docCache) Add(context.Context, string, *ast.QueryDocument) {}

func (c *docCache) keep(key string, doc *ast.QueryDocument) {
	if len(key) > c.maxDoc {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&docEntry{key: key, doc: doc})
	c.bytes += len(key)
	for c.bytes > c.maxBytes {
		last := c.order.Back()
		old := last.Value.(*docEntry)
		c.order.Remove(last)
		delete(c.byKey, old.key)
		c.bytes -= len(old.key)
	}
}

// Len and Bytes are the documents kept and their text's size.
func (c *docCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *docCache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// keepDocuments is the extension, used after every limit, that puts the
// request's document in the cache.
type keepDocuments struct{ cache *docCache }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = keepDocuments{}

func (keepDocuments) ExtensionName() string                   { return "KeepDocuments" }
func (keepDocuments) Validate(graphql.ExecutableSchema) error { return nil }
func (k keepDocuments) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	k.cache.keep(oc.RawQuery, oc.Doc)
	return nil
}
