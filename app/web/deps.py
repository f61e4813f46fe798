"""Named FastAPI dependencies: settings, a per-request database connection, host, tuner, clock,
and the present as the sampler's latest tick left it."""

import sqlite3
from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Path, Request

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Tick
from app.metrics.present import Present
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


def get_host(request: Request) -> Host:
    host: Host = request.app.state.host
    return host


def get_tuner(request: Request) -> Tuner:
    tuner: Tuner = request.app.state.tuner
    return tuner


def get_present(request: Request) -> Present:
    present: Present = request.app.state.present
    return present


def get_latest_tick(request: Request) -> Tick:
    """What the sampler's last tick read and concluded; requests read this, never /proc."""
    tick: Tick = request.app.state.sampler.latest
    return tick


def get_clock(request: Request) -> Callable[[], float]:
    clock: Callable[[], float] = request.app.state.clock
    return clock


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[sqlite3.Connection, Depends(get_db)]
HostDep = Annotated[Host, Depends(get_host)]
TunerDep = Annotated[Tuner, Depends(get_tuner)]
PresentDep = Annotated[Present, Depends(get_present)]
LatestTickDep = Annotated[Tick, Depends(get_latest_tick)]
ClockDep = Annotated[Callable[[], float], Depends(get_clock)]
# A row id from a URL: SQLite integers are 64-bit, so larger numbers are refused before a query.
RowId = Annotated[int, Path(ge=1, le=2**62)]
