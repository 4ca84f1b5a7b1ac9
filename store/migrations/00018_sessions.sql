-- +goose Up
-- Web UI sessions (docs/ui.md#sign-in-and-sessions): an API token exchanged
-- for a cookie. Like tokens, a session is stored as the SHA-256 of its
-- secret. It acts as the token it came from, so revoking the token (or
-- deleting its user or tenant, which deletes the token) ends it: lookups
-- join the token and require it unrevoked, and deleted tokens take their
-- sessions with them.
CREATE TABLE sessions (
    hash         bytea       PRIMARY KEY,
    token_id     uuid        NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_token_id ON sessions (token_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
