"""Named FastAPI dependencies: settings, a per-request database connection, tuner, clock, and
the present as the sampler's last tick left it (no route is handed the host: no GET reads /proc
or /sys)."""

import sqlite3
from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Path, Request

from app.config import Settings
from app.live.present import Present
from app.live.snapshot import BoxNow
from app.store import db
from app.tuning.tuner import Tuner


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_db(request: Request) -> Iterator[sqlite3.Connection]:
    conn = db.connect(request.app.state.settings.db)
    try:
        yield conn
    finally:
        conn.close()


def get_tuner(request: Request) -> Tuner:
    tuner: Tuner = request.app.state.tuner
    return tuner


def get_present(request: Request) -> Present:
    present: Present = request.app.state.present
    return present


def get_box(request: Request) -> BoxNow:
    """The present as the sampler's last tick left it: requests read this, never /proc or /sys."""
    box: BoxNow = request.app.state.present.box
    return box


def get_clock(request: Request) -> Callable[[], float]:
    clock: Callable[[], float] = request.app.state.clock
    return clock


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[sqlite3.Connection, Depends(get_db)]
TunerDep = Annotated[Tuner, Depends(get_tuner)]
PresentDep = Annotated[Present, Depends(get_present)]
BoxDep = Annotated[BoxNow, Depends(get_box)]
ClockDep = Annotated[Callable[[], float], Depends(get_clock)]
# A row id from a URL: SQLite integers are 64-bit, so larger numbers are refused before a query.
RowId = Annotated[int, Path(ge=1, le=2**62)]
