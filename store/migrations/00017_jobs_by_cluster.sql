-- +goose Up
-- A cluster's jobs, and the service states read from their tasks, are
-- looked up by cluster: without this every cluster show scanned all jobs.
CREATE INDEX jobs_cluster ON jobs (cluster_id);

-- +goose Down
DROP INDEX jobs_cluster;
