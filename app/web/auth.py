"""Who may change things: an admin password (salted scrypt), sessions, API tokens, throttling.

Reading is open by default (MDBOOST_READ_REQUIRES_LOGIN closes it). Every change needs an admin:
a session cookie (HttpOnly, SameSite=Strict) plus the session's CSRF token, or an
`Authorization: Bearer` token with the admin scope; a read token (MDBOOST_READ_TOKEN, or one made
with scope "read") only reads. Secrets are stored only as hashes and never logged.
"""

import base64
import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal

from app.shapes.tuning import Token
from app.store import db

SESSION_COOKIE = "mdboost_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 30 * 86400
# scrypt parameters (RFC 7914 section 2: N=2^14, r=8, p=1 is the interactive-login setting).
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
FAILURES_ALLOWED = 5
FAILURE_WINDOW_S = 60.0


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32
    )
    encoded = [base64.b64encode(part).decode() for part in (salt, digest)]
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encoded[0]}${encoded[1]}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except ValueError:
        return False
    return scheme == "scrypt" and hmac.compare_digest(actual, expected)


def token_hash(token: str) -> str:
    """Tokens are random (256 bits), so a plain SHA-256 is enough to store them safely."""
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


# ---- the stored password (when MDBOOST_PASSWORD is not set)
def stored_password_hash(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT hash FROM auth_password WHERE id = 1").fetchone()
    return str(row[0]) if row else None


def set_password_once(conn: sqlite3.Connection, password: str, now: float) -> bool:
    """The one-time set-up: store the first password; False if one exists already."""
    hashed = hash_password(password)
    with db.write_transaction(conn):
        cursor = conn.execute(
            "INSERT OR IGNORE INTO auth_password (id, hash, created) VALUES (1, ?, ?)",
            (hashed, now),
        )
    return cursor.rowcount == 1


def note_env_password(conn: sqlite3.Connection, password: str | None, now: float) -> bool:
    """At start-up: remember MDBOOST_PASSWORD (salted); True when it changed, which ends every
    session. An unset one forgets the last, so the set-up password's fingerprint applies."""
    row = conn.execute("SELECT hash FROM auth_env_password WHERE id = 1").fetchone()
    if password is not None and row is not None and verify_password(password, row[0]):
        return False
    if password is None and row is None:
        return False
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_env_password")
        if password is not None:
            conn.execute(
                "INSERT INTO auth_env_password (id, hash, created) VALUES (1, ?, ?)",
                (hash_password(password), now),
            )
        conn.execute("DELETE FROM auth_sessions")
    return True


def password_fingerprint(conn: sqlite3.Connection, env_password_set: bool) -> str:
    """Which admin password is in force, revealing nothing: a hash of its salted hash. Each
    session carries the one it was opened under; a new password (or a reset) changes it."""
    if env_password_set:
        row = conn.execute("SELECT hash FROM auth_env_password WHERE id = 1").fetchone()
        return token_hash("env:" + (row[0] if row else ""))
    return token_hash("setup:" + (stored_password_hash(conn) or ""))


# ---- login sessions
@dataclass(frozen=True)
class LoginSession:
    token: str  # goes into the cookie; only its hash is stored
    csrf: str


def create_session(conn: sqlite3.Connection, now: float, password_fp: str) -> LoginSession:
    session = LoginSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_sessions WHERE expires < ?", (now,))
        conn.execute(
            "INSERT INTO auth_sessions (token_hash, csrf, created, expires, password_fp)"
            " VALUES (?, ?, ?, ?, ?)",
            (token_hash(session.token), session.csrf, now, now + SESSION_SECONDS, password_fp),
        )
    return session


def find_session(
    conn: sqlite3.Connection, token: str, now: float, password_fp: str
) -> LoginSession | None:
    """The session behind a cookie, if it has not expired and its password is still in force."""
    row = conn.execute(
        "SELECT csrf FROM auth_sessions WHERE token_hash = ? AND expires >= ? AND password_fp = ?",
        (token_hash(token), now, password_fp),
    ).fetchone()
    return LoginSession(token, row[0]) if row else None


def end_session(conn: sqlite3.Connection, token: str) -> None:
    with db.write_transaction(conn):
        conn.execute("DELETE FROM auth_sessions WHERE token_hash = ?", (token_hash(token),))


def end_every_session(conn: sqlite3.Connection) -> int:
    """Sign out everywhere: every browser must sign in again (API tokens stay)."""
    with db.write_transaction(conn):
        return conn.execute("DELETE FROM auth_sessions").rowcount


# ---- API tokens made in the page
Scope = Literal["read", "admin"]  # read: GET API, /metrics, the page; admin: everything


def create_api_token(
    conn: sqlite3.Connection,
    name: str,
    now: float,
    parent_id: int | None = None,
    scope: Scope = "admin",
) -> str:
    """A new token; `parent_id` is the page-made token that made it, revoked with it."""
    token = "mdb_" + secrets.token_urlsafe(32)
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO api_tokens (name, token_hash, created, parent_id, scope)"
            " VALUES (?, ?, ?, ?, ?)",
            (name, token_hash(token), now, parent_id, scope),
        )
    return token


def api_token(conn: sqlite3.Connection, token: str) -> tuple[int, Scope] | None:
    """The id and scope of an active page-made token, or None."""
    row = conn.execute(
        "SELECT id, scope FROM api_tokens WHERE token_hash = ? AND revoked IS NULL",
        (token_hash(token),),
    ).fetchone()
    return (int(row[0]), "read" if row[1] == "read" else "admin") if row else None


def revoke_api_token(conn: sqlite3.Connection, token_id: int, now: float) -> bool:
    """Revoke a token and every token made with it, and with those, and so on (a leaked token
    must not live on through the tokens it made). False when it was not active."""
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


def list_api_tokens(conn: sqlite3.Connection) -> list[Token]:
    rows = conn.execute(
        "SELECT id, name, scope, created, revoked, parent_id FROM api_tokens ORDER BY id DESC"
    ).fetchall()
    return [
        Token(
            id=r["id"],
            name=r["name"],
            scope=r["scope"],
            created=r["created"],
            revoked=r["revoked"],
            parent_id=r["parent_id"],
        )
        for r in rows
    ]


# ---- throttling
class LoginThrottle:
    """At most FAILURES_ALLOWED failed logins per client per minute; then 429 until it cools.

    An attempt is counted before its password is checked (reserve), so parallel guesses cannot
    all slip past the count while the first ones are still hashing (issue 13: 35 of 40 did).
    """

    def __init__(self) -> None:
        self.attempts: dict[str, deque[float]] = {}
        self.lock = threading.Lock()

    def reserve(self, client: str) -> int:
        """Count one attempt for `client` now; seconds to wait instead, when it has none left."""
        now = time.monotonic()
        with self.lock:
            attempts = self.attempts.setdefault(client, deque())
            while attempts and now - attempts[0] > FAILURE_WINDOW_S:
                attempts.popleft()
            if len(attempts) >= FAILURES_ALLOWED:
                return int(FAILURE_WINDOW_S - (now - attempts[0])) + 1
            attempts.append(now)
            if len(self.attempts) > 10_000:  # a flood of addresses must not grow memory forever
                self.attempts = {client: attempts}
            return 0

    def succeeded(self, client: str) -> None:
        """The password was right: the client's earlier attempts no longer count."""
        with self.lock:
            self.attempts.pop(client, None)
