-- +goose Up
-- Plugin resources (docs/task-protocol.md#plugin-resources): per-tenant
-- versioned blobs for drivers. live and slated give the state (inactive,
-- staged, active, recalled);
-- sync makes the slated set live and records it as the tenant's next
-- resource generation in resource_generation_members, which jobs pin.
CREATE TABLE resources (
    id            bigserial   PRIMARY KEY,
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    plugin_type   text        NOT NULL CHECK (plugin_type IN ('providertypes', 'automatortypes')),
    plugin        text        NOT NULL,
    resource_type text        NOT NULL,
    name          text        NOT NULL,
    version       integer     NOT NULL,
    format        text        NOT NULL CHECK (format IN ('file', 'archive')),
    permissions   text        NOT NULL DEFAULT '',
    content       bytea       NOT NULL,
    digest        text        NOT NULL,
    size          bigint      NOT NULL,
    live          boolean     NOT NULL DEFAULT false,
    slated        boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, plugin_type, plugin, resource_type, name, version)
);
CREATE UNIQUE INDEX resources_one_live ON resources (tenant_id, plugin_type, plugin, resource_type, name) WHERE live;

-- The tenant's current resource generation (absent: 0, nothing live).
CREATE TABLE resource_generations (
    tenant_id  uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    generation integer     NOT NULL,
    synced_at  timestamptz NOT NULL DEFAULT now()
);

-- The live set of every generation.
CREATE TABLE resource_generation_members (
    tenant_id   uuid    NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    generation  integer NOT NULL,
    resource_id bigint  NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    PRIMARY KEY (tenant_id, generation, resource_id)
);
CREATE INDEX resource_generation_members_resource ON resource_generation_members (resource_id);

-- A job pins the generation current when it is made (retryJob refreshes it).
ALTER TABLE jobs ADD COLUMN resource_generation integer NOT NULL DEFAULT 0;
-- +goose StatementBegin
CREATE FUNCTION coopr_pin_resource_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.resource_generation := coalesce(
        (SELECT generation FROM resource_generations WHERE tenant_id = NEW.tenant_id), 0);
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER jobs_pin_resource_generation BEFORE INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION coopr_pin_resource_generation();

-- The resources listed in a claimed attempt's payload, under its claim
-- token: resourceContent serves only these.
CREATE TABLE task_resources (
    task_id     text  PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    claim_token bytea NOT NULL,
    resources   jsonb NOT NULL
);

-- +goose Down
DROP TABLE task_resources;
DROP TRIGGER jobs_pin_resource_generation ON jobs;
DROP FUNCTION coopr_pin_resource_generation();
ALTER TABLE jobs DROP COLUMN resource_generation;
DROP TABLE resource_generation_members;
DROP TABLE resource_generations;
DROP TABLE resources;
