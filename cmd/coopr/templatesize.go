package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/client"
)

// templateMinSize is the fewest nodes the tenant's template takes, its
// extends and includes folded in (docs/catalog.md#size); ok is false when
// the catalog has no such template or it does not resolve, which the
// create itself then reports.
func templateMinSize(ctx context.Context, c *client.Client, template string) (size int, ok bool, err error) {
	type entity struct {
		Name     string
		Document json.RawMessage
	}
	var out struct {
		Catalog struct{ Templates, Partials []entity }
	}
	if err := gql(ctx, c, `{ catalog { templates: entities(kind: CLUSTERTEMPLATES) { name document }
		partials: entities(kind: PARTIALTEMPLATES) { name document } } }`, nil, &out); err != nil {
		return 0, false, err
	}
	parse := func(kind catalog.Kind, es []entity) map[string]*catalog.Template {
		m := map[string]*catalog.Template{}
		for _, e := range es {
			if v, _ := catalog.ParseEntity(kind, e.Name, e.Document); v != nil {
				if t, ok := v.(*catalog.Template); ok {
					m[e.Name] = t
				}
			}
		}
		return m
	}
	templates := parse(catalog.KindClusterTemplate, out.Catalog.Templates)
	if templates[template] == nil {
		return 0, false, nil
	}
	t, err := catalog.Merge(template, templates, parse(catalog.KindPartialTemplate, out.Catalog.Partials))
	if err != nil {
		// The create names what is wrong with the template.
		return 0, false, nil
	}
	return max(1, t.Constraints.Size.Min), true, nil
}

// sizeNote says which size a create without --size takes.
func sizeNote(template string, size int) string {
	return fmt.Sprintf("no --size: %s, the fewest %s takes", count(size, "node"), template)
}
