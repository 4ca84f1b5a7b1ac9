-- +goose Up
-- A best-effort task (cleanup inside a node the operation removes) whose
-- node is unreachable or gone, or whose attempts ran out, ends SKIPPED:
-- done, as far as the tasks after it care.
ALTER TABLE tasks ADD COLUMN best_effort boolean NOT NULL DEFAULT false;
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
    CHECK (state IN ('NOT_SUBMITTED', 'QUEUED', 'IN_PROGRESS', 'COMPLETE', 'FAILED', 'DROPPED', 'SKIPPED'));
-- Jobs planned before: the same steps are best-effort (the planner marks
-- them so from now on), so that a delete left running or failed can finish.
UPDATE tasks t SET best_effort = true FROM jobs j
    WHERE j.id = t.job_id AND t.node_id <> '' AND t.rollback_of IS NULL
        AND t.action IN ('NETWORK_UNCONFIGURE', 'STOP', 'REMOVE')
        AND (j.action = 'CLUSTER_DELETE' OR (j.action = 'SCALE_IN' AND EXISTS (
            SELECT 1 FROM tasks d WHERE d.job_id = t.job_id AND d.node_id = t.node_id AND d.action = 'DELETE')));

-- Set when a task found the node unreachable or gone (the driver said so),
-- with the task's message; cleared when a later task on it succeeds.
ALTER TABLE nodes
    ADD COLUMN unreachable_since  timestamptz,
    ADD COLUMN unreachable_reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE nodes DROP COLUMN unreachable_since, DROP COLUMN unreachable_reason;
UPDATE tasks SET state = 'COMPLETE' WHERE state = 'SKIPPED';
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
    CHECK (state IN ('NOT_SUBMITTED', 'QUEUED', 'IN_PROGRESS', 'COMPLETE', 'FAILED', 'DROPPED'));
ALTER TABLE tasks DROP COLUMN best_effort;
