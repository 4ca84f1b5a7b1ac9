-- +goose Up
-- Tells every server when a token or a web UI session stops being valid, so
-- that each ends the websockets it holds for it within moments
-- (docs/security.md#ending-access). A token is revoked or deleted (its
-- user's or tenant's deletion cascades to it); a session is deleted (signed
-- out, cleaned up, or with its token). NOTIFY is sent at commit, so a
-- rolled-back revocation tells nobody. Expiry changes no row: the servers'
-- periodic re-check finds it.
-- +goose StatementBegin
CREATE FUNCTION coopr_auth_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'sessions' THEN
        PERFORM pg_notify('coopr_auth_' || current_schema(), 'session:' || encode(OLD.hash, 'hex'));
    ELSE
        PERFORM pg_notify('coopr_auth_' || current_schema(), 'token:' || OLD.id::text);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER api_tokens_revoked AFTER UPDATE OF revoked_at ON api_tokens
    FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION coopr_auth_ended();
CREATE TRIGGER api_tokens_deleted AFTER DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION coopr_auth_ended();
CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION coopr_auth_ended();

-- +goose Down
DROP TRIGGER sessions_deleted ON sessions;
DROP TRIGGER api_tokens_deleted ON api_tokens;
DROP TRIGGER api_tokens_revoked ON api_tokens;
DROP FUNCTION coopr_auth_ended();
