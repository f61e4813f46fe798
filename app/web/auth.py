"""Who may change things: an admin password (salted scrypt), sessions, API tokens.

Reading is open by default (MDBOOST_READ_REQUIRES_LOGIN closes it). Every change needs an admin:
a session cookie (HttpOnly, SameSite=Strict) plus the session's CSRF token, or an
`Authorization: Bearer` token with the admin scope; a read token (MDBOOST_READ_TOKEN, or one made
with scope "read") only reads. Secrets are stored only as hashes and never logged.
"""

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from app.shapes.tuning import Token
from app.store import auth as stored
from app.store import db

SESSION_COOKIE = "mdboost_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 30 * 86400
# scrypt parameters (RFC 7914 section 2: N=2^14, r=8, p=1 is the interactive-login setting).
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


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
def stored_password_hash(conn: db.Connection) -> str | None:
    return stored.setup_password_hash(conn)


def set_password_once(conn: db.Connection, password: str, now: float) -> bool:
    """The one-time set-up: store the first password; False if one exists already."""
    return stored.add_setup_password(conn, hash_password(password), now)


def note_env_password(conn: db.Connection, password: str | None, now: float) -> bool:
    """At start-up: remember MDBOOST_PASSWORD (salted); True when it changed, which ends every
    session. An unset one forgets the last, so the set-up password's fingerprint applies."""
    last = stored.env_password_hash(conn)
    if password is not None and last is not None and verify_password(password, last):
        return False
    if password is None and last is None:
        return False
    stored.replace_env_password(conn, None if password is None else hash_password(password), now)
    return True


def password_fingerprint(conn: db.Connection, env_password_set: bool) -> str:
    """Which admin password is in force, revealing nothing: a hash of its salted hash. Each
    session carries the one it was opened under; a new password (or a reset) changes it."""
    in_force = stored.env_password_hash if env_password_set else stored.setup_password_hash
    return _fingerprint(env_password_set, in_force(conn))


def _fingerprint(env_password_set: bool, password_hash: str | None) -> str:
    return token_hash(("env:" if env_password_set else "setup:") + (password_hash or ""))


# ---- login sessions
@dataclass(frozen=True)
class LoginSession:
    token: str  # goes into the cookie; only its hash is stored
    csrf: str


def create_session(conn: db.Connection, now: float, password_fp: str) -> LoginSession:
    session = LoginSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
    hashed = token_hash(session.token)
    stored.add_session(conn, hashed, session.csrf, now, now + SESSION_SECONDS, password_fp)
    return session


def find_session(
    conn: db.Connection, token: str, now: float, env_password_set: bool
) -> LoginSession | None:
    """The session behind a cookie, if it has not expired and its password is still in force."""
    found = stored.live_session(conn, token_hash(token), now, env_password_set)
    if found is None or found.password_fp != _fingerprint(env_password_set, found.password_hash):
        return None
    return LoginSession(token, found.csrf)


def end_session(conn: db.Connection, token: str) -> None:
    stored.delete_session(conn, token_hash(token))


def end_every_session(conn: db.Connection) -> int:
    """Sign out everywhere: every browser must sign in again (API tokens stay)."""
    return stored.delete_sessions(conn)


# ---- API tokens made in the page
Scope = Literal["read", "admin"]  # read: GET API, /metrics, the page; admin: everything


def create_api_token(
    conn: db.Connection,
    name: str,
    now: float,
    parent_id: int | None = None,
    scope: Scope = "admin",
) -> str:
    """A new token; `parent_id` is the page-made token that made it, revoked with it."""
    token = "mdb_" + secrets.token_urlsafe(32)
    stored.add_token(conn, name, token_hash(token), now, parent_id, scope)
    return token


def api_token(conn: db.Connection, token: str) -> tuple[int, Scope] | None:
    """The id and scope of an active page-made token, or None."""
    found = stored.active_token(conn, token_hash(token))
    if found is None:
        return None
    return found.id, "read" if found.scope == "read" else "admin"


def revoke_api_token(conn: db.Connection, token_id: int, now: float) -> bool:
    """Revoke a token and every token made with it, and with those, and so on (a leaked token
    must not live on through the tokens it made). False when it was not active."""
    return stored.revoke_token(conn, token_id, now)


def list_api_tokens(conn: db.Connection) -> list[Token]:
    return stored.tokens(conn)
