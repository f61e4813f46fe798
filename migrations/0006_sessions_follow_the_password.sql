-- A session belongs to the admin password it was opened with; another password ends it.
-- A fingerprint of the password in force (a SHA-256 of its salted scrypt hash); sessions from
-- before this migration carry none and must sign in again.
ALTER TABLE auth_sessions ADD COLUMN password_fp TEXT NOT NULL DEFAULT '';

-- MDBOOST_PASSWORD as last seen at start-up (salted scrypt), to notice that it changed.
CREATE TABLE auth_env_password (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL,              -- scrypt$N$r$p$salt$digest
    created REAL NOT NULL
);
