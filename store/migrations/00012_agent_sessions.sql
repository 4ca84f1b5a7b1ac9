-- +goose Up
-- Agents hold a websocket session open while they run (leases alone take
-- 30 s to notice a dead agent, docs/operations.md#lost-agents; the session
-- finds one in seconds). sessions
-- counts the open ones over every server; disconnected_at is when it fell
-- to zero.
ALTER TABLE agents
    ADD COLUMN sessions        integer     NOT NULL DEFAULT 0 CHECK (sessions >= 0),
    ADD COLUMN disconnected_at timestamptz;

-- +goose Down
ALTER TABLE agents DROP COLUMN sessions, DROP COLUMN disconnected_at;
