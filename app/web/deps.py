"""The app's state, reached only from here: named FastAPI dependencies (settings, a per-request
database connection, tuner, clock, the present as the sampler's last tick left it, ...) and the
same getters for helpers that hold a request but are no route (templates, the boost panel).
No route is handed the host: no GET reads /proc or /sys."""

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Path, Request

from app.config import Settings
from app.live.sampler import Sampler
from app.live.snapshot import Snapshot
from app.live.snapshot_builder import SnapshotBuilder
from app.md.access import TuningAccess
from app.store import db
from app.store.opening import MovedAside
from app.tuning.tuner import Tuner
from app.web import request_db
from app.web.throttle import Throttle
from app.web.tick_cache import TickCache


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_db(request: Request) -> db.Connection:
    """The request's own connection (app/web/request_db.py closes it once the answer is sent)."""
    return request_db.of(request.scope).get()


def get_tuner(request: Request) -> Tuner:
    tuner: Tuner = request.app.state.tuner
    return tuner


def get_snapshot_builder(request: Request) -> SnapshotBuilder:
    snapshot_builder: SnapshotBuilder = request.app.state.snapshot_builder
    return snapshot_builder


def get_snapshot(request: Request) -> Snapshot:
    """The present as the sampler's last tick left it: requests read this, never /proc or /sys."""
    return get_snapshot_builder(request).snapshot


def get_clock(request: Request) -> Callable[[], float]:
    clock: Callable[[], float] = request.app.state.clock
    return clock


def get_sampler(request: Request) -> Sampler:
    sampler: Sampler = request.app.state.sampler
    return sampler


def get_tuning_access(request: Request) -> TuningAccess:
    """May this process tune, and why not: checked once at start-up (kernel/access.py)."""
    access: TuningAccess = request.app.state.tuning_access
    return access


def get_reconcile(request: Request) -> str | None:
    """What start-up did with a tuning session a stop or crash left open (None: there was none)."""
    done: str | None = request.app.state.reconcile
    return done


def get_moved_aside(request: Request) -> MovedAside | None:
    """The damaged database start-up moved aside (app/store/opening.py), while it is there."""
    moved: MovedAside | None = request.app.state.moved_aside
    return moved


def get_samples_cache(request: Request) -> TickCache:
    cache: TickCache = request.app.state.samples_cache
    return cache


def get_login_throttle(request: Request) -> Throttle:
    throttle: Throttle = request.app.state.login_throttle
    return throttle


def get_bearer_throttle(request: Request) -> Throttle:
    throttle: Throttle = request.app.state.bearer_throttle
    return throttle


def sessions_accepted(request: Request) -> bool:
    """False after start-up could not note MDBOOST_PASSWORD: no old login session is trusted."""
    accepted: bool = request.app.state.sessions_accepted
    return accepted


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[db.Connection, Depends(get_db)]
TunerDep = Annotated[Tuner, Depends(get_tuner)]
SnapshotBuilderDep = Annotated[SnapshotBuilder, Depends(get_snapshot_builder)]
SnapshotDep = Annotated[Snapshot, Depends(get_snapshot)]
ClockDep = Annotated[Callable[[], float], Depends(get_clock)]
SamplerDep = Annotated[Sampler, Depends(get_sampler)]
TuningAccessDep = Annotated[TuningAccess, Depends(get_tuning_access)]
ReconcileDep = Annotated[str | None, Depends(get_reconcile)]
SamplesCacheDep = Annotated[TickCache, Depends(get_samples_cache)]
LoginThrottleDep = Annotated[Throttle, Depends(get_login_throttle)]
# A row id from a URL: SQLite integers are 64-bit, so larger numbers are refused before a query.
RowId = Annotated[int, Path(ge=1, le=2**62)]
