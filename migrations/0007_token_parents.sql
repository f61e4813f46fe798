-- A token made with another token is revoked with it (cascading revoke).
-- NULL: made on the page, with MDBOOST_API_TOKEN, or before this migration.
ALTER TABLE api_tokens ADD COLUMN parent_id INTEGER REFERENCES api_tokens (id);
