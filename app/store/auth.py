"""Who may change things, as stored: the admin password's hashes, login sessions, API tokens.
Hashing and checking live in app/web/auth.py; here only their rows."""

import sqlite3

from app.records import LiveSession
from app.shapes.tuning import Token
from app.store import db


def env_password_hash(conn: sqlite3.Connection) -> str | None:
    """The salted hash of the MDBOOST_PASSWORD last seen at start-up."""
    row = conn.execute("SELECT hash FROM auth_env_password WHERE id = 1").fetchone()
    return str(row[0]) if row else None


def setup_password_hash(conn: sqlite3.Connection) -> str | None:
    """The salted hash of the password chosen on the set-up page."""
    row = conn.execute("SELECT hash FROM auth_password WHERE id = 1").fetchone()
    return str(row[0]) if row else None


def add_setup_password(conn: sqlite3.Connection, hashed: str, now: float) -> bool:
    """Store the first set-up password; False if one exists already."""
    with db.write_transaction(conn):
        cursor = conn.execute(
            "INSERT OR IGNORE INTO auth_password (id, hash, created) VALUES (1, ?, ?)",
            (hashed, now),
        )
    return cursor.rowcount == 1


def replace_env_password(conn: sqlite3.Connection, hashed: str | None, now: float) -> None:
    """Remember a new MDBOOST_PASSWORD's hash (None: forget it) and end every login session."""
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_env_password")
        if hashed is not None:
            conn.execute(
                "INSERT INTO auth_env_password (id, hash, created) VALUES (1, ?, ?)",
                (hashed, now),
            )
        conn.execute("DELETE FROM auth_sessions")


def add_session(
    conn: sqlite3.Connection,
    token_hash: str,
    csrf: str,
    now: float,
    expires: float,
    password_fp: str,
) -> None:
    """A new login session; expired ones go in the same transaction."""
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_sessions WHERE expires < ?", (now,))
        conn.execute(
            "INSERT INTO auth_sessions (token_hash, csrf, created, expires, password_fp)"
            " VALUES (?, ?, ?, ?, ?)",
            (token_hash, csrf, now, expires, password_fp),
        )


def live_session(
    conn: sqlite3.Connection, token_hash: str, now: float, env_password: bool
) -> LiveSession | None:
    """A login session that has not expired, with the hash of the admin password in force now
    (MDBOOST_PASSWORD's when `env_password`, else the set-up one's), in one statement: every
    signed-in request asks."""
    password = "auth_env_password" if env_password else "auth_password"
    row = conn.execute(
        f"SELECT csrf, password_fp, (SELECT hash FROM {password} WHERE id = 1)"
        " FROM auth_sessions WHERE token_hash = ? AND expires >= ?",
        (token_hash, now),
    ).fetchone()
    return LiveSession(str(row[0]), str(row[1]), row[2]) if row else None


def delete_session(conn: sqlite3.Connection, token_hash: str) -> None:
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_sessions WHERE token_hash = ?", (token_hash,))


def delete_sessions(conn: sqlite3.Connection) -> int:
    """End every login session; how many there were."""
    with db.write_transaction(conn):
        return conn.execute("DELETE FROM auth_sessions").rowcount


def add_token(
    conn: sqlite3.Connection,
    name: str,
    token_hash: str,
    now: float,
    parent_id: int | None,
    scope: str,
) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO api_tokens (name, token_hash, created, parent_id, scope)"
            " VALUES (?, ?, ?, ?, ?)",
            (name, token_hash, now, parent_id, scope),
        )


_TOKEN = "SELECT id, name, scope, created, revoked, parent_id FROM api_tokens"


def _token(row: sqlite3.Row) -> Token:
    return Token(
        id=row["id"],
        name=row["name"],
        scope=row["scope"],
        created=row["created"],
        revoked=row["revoked"],
        parent_id=row["parent_id"],
    )


def active_token(conn: sqlite3.Connection, token_hash: str) -> Token | None:
    """The page-made token with this hash, unless it was revoked."""
    row = conn.execute(
        f"{_TOKEN} WHERE token_hash = ? AND revoked IS NULL", (token_hash,)
    ).fetchone()
    return _token(row) if row else None


def tokens(conn: sqlite3.Connection) -> list[Token]:
    """Every page-made token, newest first, revoked ones too."""
    return [_token(row) for row in conn.execute(f"{_TOKEN} ORDER BY id DESC")]


def revoke_token(conn: sqlite3.Connection, token_id: int, now: float) -> bool:
    """Revoke a token and every token made with it, and with those, and so on. False when it
    was not active."""
    with db.write_transaction(conn):
        cursor = conn.execute(
            "UPDATE api_tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (now, token_id)
        )
        if cursor.rowcount != 1:
            return False
        conn.execute(
            "WITH RECURSIVE made(id) AS (SELECT ? UNION"
            " SELECT t.id FROM api_tokens t JOIN made ON t.parent_id = made.id)"
            " UPDATE api_tokens SET revoked = ? WHERE id IN made AND revoked IS NULL",
            (token_id, now),
        )
    return True
