-- +goose Up
-- Sessions that commit events many times a second (the engine's claims and
-- finishes) set coopr.quiet_events and wake the relay through Redis once
-- they have committed: a NOTIFY takes a lock that every notifying commit in
-- the database waits for, and holds it through its commit's flush to disk,
-- so claims waited for finishes' flushes.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION coopr_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('coopr.quiet_events', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('coopr_events_' || current_schema(), '');
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION coopr_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('coopr_events_' || current_schema(), '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
