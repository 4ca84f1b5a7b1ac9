-- +goose Up
-- What the control plane records of a cluster and its nodes
-- (docs/catalog.md#clusters-and-nodes).
ALTER TABLE clusters
    ADD COLUMN description text        NOT NULL DEFAULT '',
    ADD COLUMN template    text        NOT NULL DEFAULT '',
    ADD COLUMN provider    text        NOT NULL DEFAULT '',
    ADD COLUMN services    text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN size        integer     NOT NULL DEFAULT 0 CHECK (size >= 0),
    ADD COLUMN dns_suffix  text        NOT NULL DEFAULT 'local',
    -- NULL: the lease never ends.
    ADD COLUMN expire_at   timestamptz,
    -- The resolved template and the provider as they were at create time.
    ADD COLUMN snapshot    jsonb       NOT NULL DEFAULT '{}';
CREATE INDEX clusters_tenant ON clusters (tenant_id, owner);

ALTER TABLE nodes
    ADD COLUMN hardwaretype text NOT NULL DEFAULT '',
    ADD COLUMN imagetype    text NOT NULL DEFAULT '',
    ADD COLUMN flavor       text NOT NULL DEFAULT '',
    ADD COLUMN image        text NOT NULL DEFAULT '',
    ADD COLUMN sshuser      text NOT NULL DEFAULT '';

-- +goose Down
DROP INDEX clusters_tenant;
ALTER TABLE nodes DROP COLUMN hardwaretype, DROP COLUMN imagetype, DROP COLUMN flavor, DROP COLUMN image, DROP COLUMN sshuser;
ALTER TABLE clusters DROP COLUMN description, DROP COLUMN template, DROP COLUMN provider, DROP COLUMN services,
    DROP COLUMN size, DROP COLUMN dns_suffix, DROP COLUMN expire_at, DROP COLUMN snapshot;
