-- +goose Up
-- docs/catalog.md#identifiers: a cluster id is a sequence number of at
-- least 8 digits (00000412), a job id <clusterId>-<n> with n counted per
-- cluster, a task id <jobId>-<m> with m counted per job, each at least 3
-- digits. The cluster number also goes into hostnames.
-- lpad alone would cut numbers wider than the width.
-- +goose StatementBegin
CREATE FUNCTION coopr_pad(n bigint, width integer) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    RETURN CASE WHEN length(n::text) >= width THEN n::text ELSE lpad(n::text, width, '0') END;
-- +goose StatementEnd

CREATE SEQUENCE cluster_numbers;

ALTER TABLE task_attempts DROP CONSTRAINT task_attempts_task_id_fkey;
ALTER TABLE tasks DROP CONSTRAINT tasks_job_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT jobs_cluster_id_fkey;
ALTER TABLE nodes DROP CONSTRAINT nodes_cluster_id_fkey;

ALTER TABLE clusters ALTER COLUMN id DROP DEFAULT;
ALTER TABLE clusters ALTER COLUMN id TYPE text USING id::text;
ALTER TABLE clusters ALTER COLUMN id SET DEFAULT coopr_pad(nextval('cluster_numbers'), 8);
ALTER TABLE clusters ALTER COLUMN latest_job_id TYPE text USING latest_job_id::text;
ALTER TABLE clusters ADD COLUMN jobs_created integer NOT NULL DEFAULT 0;

ALTER TABLE jobs ALTER COLUMN id DROP DEFAULT;
ALTER TABLE jobs ALTER COLUMN id TYPE text USING id::text;
ALTER TABLE jobs ALTER COLUMN cluster_id TYPE text USING cluster_id::text;
ALTER TABLE tasks ALTER COLUMN id DROP DEFAULT;
ALTER TABLE tasks ALTER COLUMN id TYPE text USING id::text;
ALTER TABLE tasks ALTER COLUMN job_id TYPE text USING job_id::text;
ALTER TABLE task_attempts ALTER COLUMN task_id TYPE text USING task_id::text;
ALTER TABLE nodes ALTER COLUMN cluster_id TYPE text USING cluster_id::text;
ALTER TABLE events ALTER COLUMN cluster_id TYPE text USING cluster_id::text;
ALTER TABLE events ALTER COLUMN job_id TYPE text USING job_id::text;
ALTER TABLE events ALTER COLUMN task_id TYPE text USING task_id::text;

ALTER TABLE jobs ADD CONSTRAINT jobs_cluster_id_fkey FOREIGN KEY (cluster_id) REFERENCES clusters (id) ON DELETE CASCADE;
ALTER TABLE tasks ADD CONSTRAINT tasks_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE task_attempts ADD CONSTRAINT task_attempts_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE;
ALTER TABLE nodes ADD CONSTRAINT nodes_cluster_id_fkey FOREIGN KEY (cluster_id) REFERENCES clusters (id) ON DELETE CASCADE;

-- +goose Down
-- +goose StatementBegin
DO $$ BEGIN RAISE EXCEPTION 'migration 5 cannot be undone: text ids do not convert back to uuids'; END $$;
-- +goose StatementEnd
