-- +goose Up
-- A node a SCALE_IN removes leaves the macro view when the job starts and
-- the cluster when its DELETE completes (docs/planner.md#scale-operations).
ALTER TABLE nodes ADD COLUMN leaving boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE nodes DROP COLUMN leaving;
