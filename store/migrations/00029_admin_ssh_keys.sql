-- +goose Up
-- A tenant setting (docs/operations.md#keys-on-live-clusters): when on,
-- the nodes of every cluster of the tenant also let in the keys of the
-- tenant's admins, beside the owner's.
ALTER TABLE tenants ADD COLUMN admin_ssh_keys boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE tenants DROP COLUMN admin_ssh_keys;
