-- +goose Up
-- An agent token serves the agent ids that match its pattern (an id, or *
-- for any characters; docs/operations.md#agent-tokens): without it any
-- agent token could register under another agent's id and so abandon that
-- agent's claims. Tokens made before match any id, as they did: revoke
-- them and make bound ones.
ALTER TABLE api_tokens ADD COLUMN agents text;
UPDATE api_tokens SET agents = '*' WHERE kind = 'agent';
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_agents_check CHECK ((kind = 'agent') = (agents IS NOT NULL));

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN agents;
