-- +goose Up
-- Sensitive admin values of providers
-- (docs/catalog.md#sensitive-admin-values, docs/task-protocol.md#secrets):
-- the catalog row holds "__redacted__" in their place, the values live here
-- sealed with AES-256-GCM under the server's credential key, one row per
-- provider version (tenant, name and version are bound into the seal).
CREATE TABLE provider_secrets (
    tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    version    integer     NOT NULL,
    nonce      bytea       NOT NULL,
    sealed     bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name, version)
);

-- Deleting a provider version, however it happens (delete, import, tenant
-- removal), deletes its sealed values. A trigger rather than a foreign key:
-- nothing else may depend on catalog_entities.
-- +goose StatementBegin
CREATE FUNCTION coopr_drop_provider_secrets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM provider_secrets s USING gone g
    WHERE g.kind = 'providers' AND s.tenant_id = g.tenant_id AND s.name = g.name AND s.version = g.version;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER catalog_entities_provider_secrets AFTER DELETE ON catalog_entities
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION coopr_drop_provider_secrets();

-- +goose Down
DROP TRIGGER catalog_entities_provider_secrets ON catalog_entities;
DROP FUNCTION coopr_drop_provider_secrets();
DROP TABLE provider_secrets;
