-- +goose Up
-- Agents hold a websocket session open while they run (SPEC §7.2 leaves
-- liveness to leases; the session finds a dead agent in seconds). sessions
-- counts the open ones over every server; disconnected_at is when it fell
-- to zero.
ALTER TABLE agents
    ADD COLUMN sessions        integer     NOT NULL DEFAULT 0 CHECK (sessions >= 0),
    ADD COLUMN disconnected_at timestamptz;

-- +goose Down
ALTER TABLE agents DROP COLUMN sessions, DROP COLUMN disconnected_at;
