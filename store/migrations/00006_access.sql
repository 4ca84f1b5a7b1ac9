-- +goose Up
-- Users and API tokens (docs/operations.md#roles-and-visibility). Every
-- tenant has an "admin" user with the tenant-admin role; "admin" of the
-- superadmin tenant is the superadmin.
CREATE TABLE users (
    tenant_id  uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$'),
    role       text        NOT NULL CHECK (role IN ('user', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);
INSERT INTO users (tenant_id, name, role) SELECT id, 'admin', 'admin' FROM tenants;

-- A token is stored as the SHA-256 of its secret: the secret is shown once,
-- when it is made, and never again. Agent tokens belong to no user.
CREATE TABLE api_tokens (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_name    text,
    kind         text        NOT NULL CHECK (kind IN ('user', 'agent')),
    name         text        NOT NULL DEFAULT '',
    hash         bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CHECK ((kind = 'user') = (user_name IS NOT NULL)),
    FOREIGN KEY (tenant_id, user_name) REFERENCES users (tenant_id, name) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE users;
