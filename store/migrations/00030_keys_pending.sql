-- +goose Up
-- A cluster whose owner's keys changed while a job of its own was in
-- flight: the server's janitor brings it the keys once that job settles
-- (docs/operations.md#keys-on-live-clusters).
ALTER TABLE clusters ADD COLUMN keys_pending boolean NOT NULL DEFAULT false;
CREATE INDEX clusters_keys_pending ON clusters (id) WHERE keys_pending;

-- +goose Down
DROP INDEX clusters_keys_pending;
ALTER TABLE clusters DROP COLUMN keys_pending;
