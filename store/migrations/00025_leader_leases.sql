-- +goose Up
-- Leadership of the server-wide loops (the engine's scheduler, the event
-- relay; docs/operations.md#leadership-and-failover). The leader holds a
-- session advisory lock and renews its row here; a lease that ran out
-- tells a standby that the holder is gone even though its connection is
-- not (a frozen or cut-off host), and the standby ends that connection
-- with pg_terminate_backend, along with every other connection of the
-- holder's process (app: its application_name, unique per server
-- process), so that no transaction of the frozen process can still
-- commit. holder is a random token per term: a renewal that finds another
-- holder learns it lost.
CREATE TABLE leader_leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    pid        integer     NOT NULL,
    app        text        NOT NULL DEFAULT '',
    term       bigint      NOT NULL DEFAULT 1,
    acquired_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE leader_leases;
