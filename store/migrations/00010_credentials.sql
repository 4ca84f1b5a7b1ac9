-- +goose Up
-- Sensitive provider fields and driver secrets
-- (docs/task-protocol.md#secrets), sealed with AES-256-GCM under the
-- server's credential key: never in cluster rows, plans, queues or logs.
CREATE TABLE credentials (
    cluster_id text        NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    namespace  text        NOT NULL,
    nonce      bytea       NOT NULL,
    sealed     bytea       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, namespace)
);

-- Entering TERMINATED wipes the cluster's secrets, whichever code path
-- sets the status.
-- +goose StatementBegin
CREATE FUNCTION coopr_wipe_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM credentials WHERE cluster_id = NEW.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER clusters_terminated AFTER UPDATE OF status ON clusters
    FOR EACH ROW WHEN (NEW.status = 'TERMINATED' AND OLD.status IS DISTINCT FROM 'TERMINATED')
    EXECUTE FUNCTION coopr_wipe_credentials();

-- +goose Down
DROP TRIGGER clusters_terminated ON clusters;
DROP FUNCTION coopr_wipe_credentials();
DROP TABLE credentials;
