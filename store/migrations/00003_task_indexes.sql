-- +goose Up
-- Claims and finishes find their tasks by primary key. A partial index whose
-- predicate their conditions imply (state = 'QUEUED', state = 'IN_PROGRESS')
-- tempts the planner, whenever statistics say few tasks are queued, into
-- scanning every queued task of the tenant once per claimed task. The sweeps
-- (reconcile, reaper) get partial indexes on predicates those statements
-- cannot imply.
ALTER TABLE tasks ADD COLUMN queued boolean GENERATED ALWAYS AS (state = 'QUEUED') STORED;
DROP INDEX tasks_queued;
CREATE INDEX tasks_queued ON tasks (tenant_id) WHERE queued;
DROP INDEX tasks_in_progress;
CREATE INDEX tasks_leased ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;

-- +goose Down
DROP INDEX tasks_leased;
DROP INDEX tasks_queued;
ALTER TABLE tasks DROP COLUMN queued;
CREATE INDEX tasks_in_progress ON tasks (lease_expires_at) WHERE state = 'IN_PROGRESS';
CREATE INDEX tasks_queued ON tasks (tenant_id) WHERE state = 'QUEUED';
