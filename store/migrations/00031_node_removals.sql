-- +goose Up
-- A node removed leaves a row here with its cluster and the removing
-- transaction, as a node changed carries view_xid (migration 00023): a
-- claim finds the engine's view of a cluster current by looking for the
-- nodes changed and removed since the view's snapshot, through two
-- indexes, instead of counting every node of the cluster (docs/engine.md,
-- Payload). Insert-only, so removals never wait for one another; no
-- foreign key, so a cluster's own deletion removes its nodes freely.
CREATE TABLE node_removals (
    cluster_id text NOT NULL,
    xid        xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX node_removals_cluster ON node_removals (cluster_id, xid);

-- +goose StatementBegin
CREATE FUNCTION coopr_node_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO node_removals (cluster_id) SELECT DISTINCT cluster_id FROM gone;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER nodes_removed AFTER DELETE ON nodes REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION coopr_node_removed();

-- +goose Down
DROP TRIGGER nodes_removed ON nodes;
DROP FUNCTION coopr_node_removed();
DROP TABLE node_removals;
