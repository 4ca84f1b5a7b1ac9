-- +goose Up
-- Clusters and their nodes, as far as the job engine needs them; the
-- control plane adds its columns beside these.
CREATE TABLE clusters (
    id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name          text        NOT NULL CHECK (name <> ''),
    owner         text        NOT NULL DEFAULT '',
    status        text        NOT NULL CHECK (status IN ('PENDING', 'ACTIVE', 'INCOMPLETE', 'INCONSISTENT', 'TERMINATED')),
    message       text        NOT NULL DEFAULT '',
    config        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    latest_job_id uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    id          text        PRIMARY KEY,
    cluster_id  uuid        NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    nodenum     integer     NOT NULL,
    hostname    text        NOT NULL DEFAULT '',
    services    text[]      NOT NULL DEFAULT '{}',
    ipaddresses jsonb       NOT NULL DEFAULT '{}',
    -- Driver facts by namespace (vm, network, node, service:<name>),
    -- docs/task-protocol.md#facts.
    facts       jsonb       NOT NULL DEFAULT '{}',
    UNIQUE (cluster_id, nodenum)
);

CREATE TABLE jobs (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    cluster_id     uuid        NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    action         text        NOT NULL,
    state          text        NOT NULL CHECK (state IN ('NOT_SUBMITTED', 'RUNNING', 'PAUSED', 'COMPLETE', 'FAILED')),
    message        text        NOT NULL DEFAULT '',
    -- The cluster status before the job, and after it succeeds or fails.
    prev_status    text        NOT NULL,
    success_status text        NOT NULL,
    failure_status text        NOT NULL,
    -- Set once the cluster status reflects the job's end (no task in flight).
    settled        boolean     NOT NULL DEFAULT false,
    plan_hash      text        NOT NULL,
    -- The plan's DAG edges between task indexes, delta-encoded varints: a
    -- 1,000-node plan can have 10^6 of them, too many for rows.
    edges          bytea       NOT NULL,
    stages         integer     NOT NULL,
    -- The definitions of the cluster's services when the job was planned:
    -- payloads, attempt budgets and timeouts come from them.
    services       jsonb       NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_unsettled ON jobs (id) WHERE NOT settled;

CREATE TABLE tasks (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id           uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id        uuid        NOT NULL,
    idx              integer     NOT NULL,
    node_id          text        NOT NULL DEFAULT '', -- '' for a cluster-scoped task
    action           text        NOT NULL,
    service          text        NOT NULL DEFAULT '',
    stage            integer     NOT NULL,
    state            text        NOT NULL CHECK (state IN ('NOT_SUBMITTED', 'QUEUED', 'IN_PROGRESS', 'COMPLETE', 'FAILED', 'DROPPED')),
    -- attempt numbers every dispatch; failures counts failed attempts
    -- against max_attempts.
    attempt          integer     NOT NULL DEFAULT 0,
    failures         integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    timeout_seconds  integer     NOT NULL CHECK (timeout_seconds >= 1),
    -- A CONFIRM rollback task (docs/operations.md#confirm-rollback) runs
    -- before the CONFIRM at index rollback_of, after the rollback task at
    -- index after_idx.
    rollback_of      integer,
    after_idx        integer,
    claim_token      bytea,
    agent_id         text,
    lease_expires_at timestamptz,
    timeout_at       timestamptz,
    retry_at         timestamptz, -- a FAILED task waiting for its next attempt
    message          text        NOT NULL DEFAULT '',
    UNIQUE (job_id, idx)
);
CREATE INDEX tasks_in_progress ON tasks (lease_expires_at) WHERE state = 'IN_PROGRESS';
CREATE INDEX tasks_queued ON tasks (tenant_id) WHERE state = 'QUEUED';

CREATE TABLE task_attempts (
    task_id     uuid        NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL,
    agent_id    text        NOT NULL,
    claimed_at  timestamptz NOT NULL,
    finished_at timestamptz,
    status      integer,
    message     text        NOT NULL DEFAULT '',
    retryable   boolean,
    stdout_tail text        NOT NULL DEFAULT '',
    stderr_tail text        NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, attempt)
);

-- Every state change, for subscriptions and audit; written in the
-- transaction of the change it records.
CREATE TABLE events (
    id         bigserial   PRIMARY KEY,
    tenant_id  uuid        NOT NULL,
    cluster_id uuid,
    job_id     uuid,
    task_id    uuid,
    kind       text        NOT NULL CHECK (kind IN ('cluster', 'job', 'task')),
    state      text        NOT NULL,
    attempt    integer,
    message    text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_cluster ON events (cluster_id, id);
CREATE INDEX events_job ON events (job_id, id);

-- +goose Down
DROP TABLE events;
DROP TABLE task_attempts;
DROP TABLE tasks;
DROP TABLE jobs;
DROP TABLE nodes;
DROP TABLE clusters;
