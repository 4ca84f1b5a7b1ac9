-- +goose Up
-- The audit log (docs/audit.md): one row per API mutation, written in the
-- transaction of the change it records. No foreign keys: an entry outlives
-- the tenant, user or token it names.
CREATE TABLE audit_log (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    tenant_id uuid,
    tenant    text        NOT NULL DEFAULT '',
    actor     text        NOT NULL DEFAULT '',
    token_id  uuid,
    address   text        NOT NULL DEFAULT '',
    operation text        NOT NULL,
    args      jsonb       NOT NULL DEFAULT '{}',
    outcome   text        NOT NULL,
    message   text        NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);

-- +goose Down
DROP TABLE audit_log;
