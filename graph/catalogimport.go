package graph

import (
	"strings"

	"github.com/cooprhq/coopr/catalog"
)

// withoutShared is c without its shared kinds, and how many it dropped.
func withoutShared(c *catalog.Catalog) (*catalog.Catalog, int) {
	out, dropped := catalog.New(), 0
	for _, k := range catalog.Kinds {
		for _, e := range c.Entities(k) {
			if k.Shared() {
				dropped++
				continue
			}
			out.Put(e)
		}
	}
	return out, dropped
}

// sharedChanged refuses a tenant admin's import that would change shared
// entities (named "kind/name").
func sharedChanged(changed []string) error {
	return forbidden("%s: shared by every tenant, and the document's version differs from the stored one; "+
		"only the superadmin changes shared entities: leave them out of the document or export them again", strings.Join(changed, ", "))
}
