"""The open tuning session's originals in a small file of their own beside the database.

SQLite keeps them too, but a damaged database is moved aside at the next start and a fresh one
begins: without a second copy the knobs mdboost changed would stay changed with nothing to put
back. The file is written and flushed to disk (the file, then its folder) before the first
kernel write of a session, and removed once the session's revert is journaled.
"""

import json
import logging
import os
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

from app.records import JournaledKnob

log = logging.getLogger(__name__)

SUFFIX = ".originals"


class Unreadable(Exception):
    """The file is there but cannot be read as originals: the values in it are lost."""


@dataclass(frozen=True)
class Originals:
    """The open session as the file (or a salvaged database) keeps it."""

    session_id: int  # in the database that wrote it: tells a stale file from a live one
    started: float  # wall time
    preset: str
    arrays: tuple[str, ...]
    knobs: tuple[JournaledKnob, ...]
    # The kernel's boot id when mdboost last wrote the session's knobs: after a restart of the
    # NAS the kernel holds none of them. None from a version that did not keep it.
    boot_id: str | None = None


def path_beside(database: Path) -> Path:
    return database.with_name(database.name + SUFFIX)


def write(path: Path, originals: Originals) -> None:
    """Replace the file atomically and durably: a crash leaves the old one or the new one, and
    once this returns a power cut keeps the new one (fsync of the file, then of its folder)."""
    partial = path.with_name(f".{path.name}.partial")
    body = json.dumps(asdict(originals), indent=1).encode()
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an older partial left by a crash keeps its mode otherwise
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def remove(path: Path) -> None:
    """The session is over and journaled: the next start must not bring it back."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    _sync_folder(path.parent)


def read(path: Path) -> Originals | None:
    """The originals the file keeps; None when there is no file; Unreadable when damaged."""
    try:
        body = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise Unreadable(f"cannot read {path}: {error.strerror or error}") from None
    try:
        found = json.loads(body)
        return Originals(
            session_id=int(found["session_id"]),
            started=float(found["started"]),
            preset=str(found["preset"]),
            arrays=tuple(str(a) for a in found["arrays"]),
            knobs=tuple(
                JournaledKnob(
                    key=str(k["key"]),
                    knob=str(k["knob"]),
                    target=None if k["target"] is None else str(k["target"]),
                    original=str(k["original"]),
                    desired=str(k["desired"]),
                )
                for k in found["knobs"]
            ),
            boot_id=None if found.get("boot_id") is None else str(found["boot_id"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise Unreadable(f"{path} is damaged: {error}") from None


def salvage(moved_aside: Path) -> Originals | None:
    """The open session of a damaged database moved aside, read-only and without touching it;
    None when it had none (or its sessions cannot be read); Unreadable when it had one whose
    knobs cannot be read."""
    try:
        conn = sqlite3.connect(f"{moved_aside.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as error:
        log.warning("cannot open %s to salvage a session: %s", moved_aside, error)
        return None
    conn.row_factory = sqlite3.Row
    try:
        try:
            session = conn.execute(
                "SELECT id, started, preset, arrays FROM tuning_sessions WHERE ended IS NULL"
            ).fetchone()
        except sqlite3.Error as error:
            # No originals file beside it either: every session this version opens writes one
            # before its first kernel write, so none was open.
            log.warning("the sessions in %s cannot be read (%s)", moved_aside, error)
            return None
        if session is None:
            return None
        try:
            rows = conn.execute(
                "SELECT key, knob, target, original, desired FROM tuning_knobs"
                " WHERE session_id = ? ORDER BY rowid",
                (session["id"],),
            ).fetchall()
            arrays = tuple(json.loads(session["arrays"]))
        except (sqlite3.Error, ValueError) as error:
            raise Unreadable(
                f"the open session's knobs in {moved_aside} cannot be read: {error}"
            ) from None
    finally:
        conn.close()
    return Originals(
        session_id=session["id"],
        started=session["started"],
        preset=session["preset"],
        arrays=arrays,
        knobs=tuple(JournaledKnob(**dict(row)) for row in rows),
    )


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
