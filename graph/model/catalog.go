package model

// Catalog is a tenant's catalog; its fields are resolved on demand, so a
// query for one entity reads one entity.
type Catalog struct {
	Tenant string // name
}

// CatalogEntity is one stored version of an entity; Versions is resolved
// on demand.
type CatalogEntity struct {
	Tenant   string `json:"-"`
	Kind     CatalogKind
	Name     string
	Version  int
	Document any
}
