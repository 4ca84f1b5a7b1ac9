-- +goose Up
-- Events are relayed to subscribers in commit order by transaction id: an
-- event is read once every transaction older than it has ended, so one that
-- commits late is never skipped (event ids are taken at insert, not at
-- commit, and cannot serve as the watermark).
ALTER TABLE events ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_txid ON events (txid);

-- Where the relay stopped: every transaction below watermark was relayed.
CREATE TABLE event_relay (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    watermark xid8    NOT NULL
);

-- Wakes the relay when events commit; the payload is empty, the relay
-- reads the table.
-- +goose StatementBegin
CREATE FUNCTION coopr_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('coopr_events_' || current_schema(), '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION coopr_events_notify();

-- +goose Down
DROP TRIGGER events_notify ON events;
DROP FUNCTION coopr_events_notify();
DROP TABLE event_relay;
DROP INDEX events_txid;
ALTER TABLE events DROP COLUMN txid;
