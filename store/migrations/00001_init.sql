-- +goose Up
CREATE TABLE tenants (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text        NOT NULL UNIQUE CHECK (name <> ''),
    description  text        NOT NULL DEFAULT '',
    workers      integer     NOT NULL DEFAULT 0 CHECK (workers >= 0),
    -- NULL quotas mean unlimited (docs/catalog.md#tenants).
    max_clusters integer     CHECK (max_clusters >= 0),
    max_nodes    integer     CHECK (max_nodes >= 0),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- The built-in tenant owning the shared driver descriptors; it must exist
-- before anything can be stored.
INSERT INTO tenants (name) VALUES ('superadmin');

-- Every write of a catalog entity adds an immutable row; the newest version of
-- (tenant_id, kind, name) is the current entity.
CREATE TABLE catalog_entities (
    tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind       text        NOT NULL CHECK (kind IN ('providers', 'hardwaretypes', 'imagetypes', 'services',
                                                    'clustertemplates', 'partialtemplates',
                                                    'providertypes', 'automatortypes')),
    name       text        NOT NULL CHECK (name <> ''),
    version    integer     NOT NULL CHECK (version > 0),
    body       jsonb       NOT NULL CHECK (jsonb_typeof(body) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind, name, version)
);

-- +goose Down
DROP TABLE catalog_entities;
DROP TABLE tenants;
