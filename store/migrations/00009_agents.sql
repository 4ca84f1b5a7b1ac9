-- +goose Up
-- Agents (docs/task-protocol.md#registration): an id stable across
-- restarts, an incarnation per process start, and when it was last heard
-- from.
CREATE TABLE agents (
    id            text        PRIMARY KEY CHECK (id <> ''),
    incarnation   text        NOT NULL,
    version       text        NOT NULL DEFAULT '',
    host          text        NOT NULL DEFAULT '',
    capacity      integer     NOT NULL CHECK (capacity >= 1),
    drivers       jsonb       NOT NULL DEFAULT '[]',
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE agents;
