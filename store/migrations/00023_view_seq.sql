-- +goose Up
-- Each node row carries a number and the transaction of its last change
-- to what task payloads show of it (docs/engine.md, Payload); facts are
-- not part of that. The engine keeps a view of each cluster's nodes, knows
-- from the numbers when it is out of date, and reads again only the nodes
-- changed by transactions its view could not see: with the whole cluster
-- read at every change, a task's claim cost grew with the cluster.
CREATE SEQUENCE node_view_seq;
ALTER TABLE nodes ADD COLUMN view_seq bigint NOT NULL DEFAULT nextval('node_view_seq'),
    ADD COLUMN view_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX nodes_view_seq ON nodes (cluster_id, view_seq);
CREATE INDEX nodes_view_xid ON nodes (cluster_id, view_xid);

-- +goose StatementBegin
CREATE FUNCTION coopr_node_view_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.id, NEW.cluster_id, NEW.nodenum, NEW.hostname, NEW.services, NEW.ipaddresses, NEW.leaving, NEW.sshuser,
        NEW.hardwaretype, NEW.imagetype, NEW.flavor, NEW.image)
       IS DISTINCT FROM
       (OLD.id, OLD.cluster_id, OLD.nodenum, OLD.hostname, OLD.services, OLD.ipaddresses, OLD.leaving, OLD.sshuser,
        OLD.hardwaretype, OLD.imagetype, OLD.flavor, OLD.image) THEN
        NEW.view_seq := nextval('node_view_seq');
        NEW.view_xid := pg_current_xact_id();
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER nodes_view_seq BEFORE UPDATE ON nodes FOR EACH ROW EXECUTE FUNCTION coopr_node_view_seq();

-- +goose Down
DROP TRIGGER nodes_view_seq ON nodes;
DROP FUNCTION coopr_node_view_seq();
DROP INDEX nodes_view_xid;
DROP INDEX nodes_view_seq;
ALTER TABLE nodes DROP COLUMN view_xid, DROP COLUMN view_seq;
DROP SEQUENCE node_view_seq;
