-- The admin password set on the one-time set-up page (unless MDBOOST_PASSWORD is given).
CREATE TABLE auth_password (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL,              -- scrypt$N$r$p$salt$digest
    created REAL NOT NULL
);

-- Login sessions: only a hash of the cookie's token is stored.
CREATE TABLE auth_sessions (
    token_hash TEXT PRIMARY KEY,     -- sha256 hex of the cookie value
    csrf TEXT NOT NULL,              -- the session's CSRF token
    created REAL NOT NULL,
    expires REAL NOT NULL
);

-- API tokens made in the page; only hashes are stored; revoked ones stay for the record.
CREATE TABLE api_tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created REAL NOT NULL,
    revoked REAL
);
