-- +goose Up
-- The highest node number a cluster ever gave (docs/catalog.md#node-numbers):
-- a scale-out after a scale-in continues past it, so the removed nodes'
-- numbers, and the node ids made from them, are never reused.
ALTER TABLE clusters ADD COLUMN max_nodenum integer NOT NULL DEFAULT 0;
UPDATE clusters c SET max_nodenum = coalesce((SELECT max(nodenum) FROM nodes n WHERE n.cluster_id = c.id), 0);

-- +goose Down
ALTER TABLE clusters DROP COLUMN max_nodenum;
