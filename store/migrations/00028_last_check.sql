-- +goose Up
-- What the cluster's latest check found (docs/operations.md#checking-a-cluster):
-- the report of its CLUSTER_CHECK job, written when the job settles.
ALTER TABLE clusters ADD COLUMN last_check jsonb, ADD COLUMN last_check_at timestamptz;

-- +goose Down
ALTER TABLE clusters DROP COLUMN last_check, DROP COLUMN last_check_at;
