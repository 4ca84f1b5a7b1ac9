-- +goose Up
-- A user's SSH public keys (docs/operations.md#host-keys-and-logging-in):
-- BOOTSTRAP installs the cluster owner's into the nodes' authorized_keys so
-- that the owner can log in. Only public keys are kept; the same key twice
-- for one user is refused.
CREATE TABLE user_ssh_keys (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   uuid        NOT NULL,
    user_name   text        NOT NULL,
    name        text        NOT NULL,
    type        text        NOT NULL,
    fingerprint text        NOT NULL,
    public_key  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, user_name) REFERENCES users (tenant_id, name) ON DELETE CASCADE,
    UNIQUE (tenant_id, user_name, fingerprint)
);

-- +goose Down
DROP TABLE user_ssh_keys;
