-- +goose Up
-- Events are read by transaction id only (the relay, webhook deliveries:
-- events_txid); nothing looks them up by cluster or by job. Each index cost
-- every event row an insert, and a task writes three rows (QUEUED,
-- IN_PROGRESS, COMPLETE), in the statements that claim and finish it.
DROP INDEX events_cluster;
DROP INDEX events_job;

-- +goose Down
CREATE INDEX events_cluster ON events (cluster_id, id);
CREATE INDEX events_job ON events (job_id, id);
