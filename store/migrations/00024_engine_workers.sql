-- +goose Up
-- A tenant's workers bound its tasks IN_PROGRESS, counted over all agents
-- and servers (docs/engine.md): each claim asks coopr_claim_room how many
-- more it may take. A generated column, as for queued (migration 00003),
-- so that the partial index's predicate is one the claim and finish
-- statements cannot imply.
ALTER TABLE tasks ADD COLUMN running boolean GENERATED ALWAYS AS (state = 'IN_PROGRESS') STORED;
CREATE INDEX tasks_running ON tasks (tenant_id) WHERE running;

-- coopr_claim_room is how many more tasks the tenant may have IN_PROGRESS,
-- NULL when it has no workers set (the engine used alone: no bound). It
-- holds a lock on the tenant's claims until the transaction ends, and
-- counts after taking it: a function, so that the count takes its own
-- snapshot, later than the lock, inside the caller's one statement. The
-- claims of one tenant on different servers so take turns, and each sees
-- the ones before it.
-- +goose StatementBegin
CREATE FUNCTION coopr_claim_room(tenant uuid) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    w integer;
    busy integer;
BEGIN
    SELECT workers INTO w FROM tenants WHERE id = tenant;
    IF w IS NULL OR w <= 0 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext(current_schema() || ':coopr-claims:' || tenant::text));
    SELECT count(*) INTO busy FROM tasks WHERE tenant_id = tenant AND running;
    RETURN greatest(w - busy, 0);
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION coopr_claim_room(uuid);
DROP INDEX tasks_running;
ALTER TABLE tasks DROP COLUMN running;
