-- +goose Up
-- Webhooks (docs/webhooks.md): a tenant's endpoints, told of job and
-- cluster state changes. Deliveries are an outbox: the dispatcher turns
-- committed events into delivery rows (in the transaction that moves its
-- watermark, so no event is enqueued twice or skipped), and the sender posts
-- them with retries.
CREATE TABLE webhooks (
    id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url           text        NOT NULL,
    events        text[]      NOT NULL,
    -- '' : clusters of every template.
    template      text        NOT NULL DEFAULT '',
    -- The HMAC key, sealed under the server's credential key.
    secret_nonce  bytea       NOT NULL,
    secret_sealed bytea       NOT NULL,
    created_by    text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id);

CREATE TABLE webhook_deliveries (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    webhook_id   uuid        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id     bigint      NOT NULL,
    event        text        NOT NULL,
    payload      jsonb       NOT NULL,
    state        text        NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts     integer     NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_status  integer,
    last_error   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'PENDING';
CREATE INDEX webhook_deliveries_history ON webhook_deliveries (webhook_id, created_at DESC, event_id DESC);

-- How far the dispatcher has turned events into deliveries: every event of
-- a transaction below the watermark is done (as the event relay's).
CREATE TABLE webhook_dispatch (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    watermark xid8    NOT NULL
);
INSERT INTO webhook_dispatch (watermark) VALUES (pg_snapshot_xmin(pg_current_snapshot()));

-- +goose Down
DROP TABLE webhook_dispatch;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
