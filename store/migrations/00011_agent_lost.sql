-- +goose Up
-- Set once an agent has been reported lost, cleared when it is heard from.
ALTER TABLE agents ADD COLUMN lost boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE agents DROP COLUMN lost;
