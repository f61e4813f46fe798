"""Build the app; lifespan: migrate, reconcile tuning, run the sampler, the notification
delivery (and the simulator)."""

import asyncio
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import FrameType
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI

from app.clock import Timeline, fixed_rate
from app.config import Settings, get_settings
from app.kernel import access
from app.kernel.host import Host
from app.live import sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.live.tick import Tick
from app.notify import delivery
from app.notify.notifier import Notifier
from app.resources import require_dirs
from app.store import db, opening
from app.store.history import add_event
from app.tuning.tuner import Tuner
from app.web import errors
from app.web.auth import note_env_password
from app.web.hosts import HostAllowList, HostGuard
from app.web.load import LoadLimit
from app.web.proxy import ForwardedMiddleware, TrustedProxies
from app.web.request_db import RequestConnections
from app.web.routes import (
    arrays,
    auth,
    docs,
    forecast,
    health,
    metrics,
    notify,
    pages,
    plan,
    runs,
    schedules,
    tuning,
)
from app.web.security import GuardMiddleware, carries_credentials, require_reader
from app.web.throttle import Throttle
from app.web.tick_cache import TickCache

if TYPE_CHECKING:  # the demo's box loads only for the demo: a real box never pays its RSS
    from app import simulator

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None, sim: "simulator.Simulator | None" = None
) -> FastAPI:
    settings = settings or get_settings()
    require_dirs(
        migrations_dir=settings.migrations_dir,
        presets_dir=settings.presets_dir,
        templates_dir=settings.templates_dir,
        static_dir=settings.static_dir,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.tuning_access = access.report_tuning_access(app.state.host)
        conn, moved_now = await asyncio.to_thread(_open_store, settings)
        app.state.moved_aside = moved_now or await asyncio.to_thread(opening.last_moved_aside, conn)
        password = settings.password.get_secret_value() if settings.password else None
        try:
            if await asyncio.to_thread(note_env_password, conn, password, app.state.clock()):
                log.warning("MDBOOST_PASSWORD is new or changed: every login session has ended")
        except db.Error as error:  # a full disk: start anyway, but trust no old session
            log.error("cannot note MDBOOST_PASSWORD (%s): no login session until a restart", error)
            app.state.sessions_accepted = False
        app.state.sampler = sampler.Sampler(
            app.state.host,
            conn,
            app.state.clock,
            settings.downsample_after_days,
            settings.keep_days or None,
        )
        tuner = app.state.tuner = Tuner.open(app.state.host, app.state.clock, settings)
        app.state.reconcile = await asyncio.to_thread(
            tuner.reconcile, moved_now.path if moved_now else None
        )
        snapshot_builder = app.state.snapshot_builder = SnapshotBuilder(
            app.state.host, conn, tuner.lock, tuner.boost_max_kb_s
        )
        tuner.attach(snapshot_builder)
        # Backoffs run on the app's clock, unless the demo's clock runs faster than real time.
        wall = time.time if sim is not None else app.state.clock
        notifier = Notifier.open(app.state.host, app.state.clock, settings, snapshot_builder, wall)
        deliverer = delivery.Deliverer.open(settings, wall)
        notifier.on_queued = deliverer.wake  # delivery sleeps until something is queued
        notifier.send_directly = deliverer.send_directly
        if tuner.recovery is not None and tuner.recovery.lost:
            notifier.originals_lost(tuner.recovery.source, tuner.recovery.knobs)

        def after_tick(tick: Tick) -> None:
            snapshot_builder.update(tick)  # first: the tuner and the notifier read the present
            tuner.on_tick(tick, snapshot_builder.snapshot)
            snapshot_builder.after_tuning()  # what a write of the tuner's changed, at once
            notifier.on_tick(tick)  # only queues: the delivery task sends
            notifier.note_disk(app.state.sampler.disk_full_since is not None)

        # The first tick before the first request, so that no request finds no present.
        first = await asyncio.to_thread(app.state.sampler.sample_once)
        await asyncio.to_thread(after_tick, first)
        for reader in (conn, tuner.conn, notifier.conn, deliverer.conn):
            db.release_memory(reader)  # start-up's one-time reads (store/db.py)
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(
                sampler.run_forever(app.state.sampler, stop, _interval(settings), after_tick, first)
            ),
            asyncio.create_task(delivery.run_forever(deliverer, stop)),
        ]
        if sim is not None:
            from app import simulator

            tasks.append(asyncio.create_task(simulator.run_forever(sim, stop, sim.wall_tick_s)))
        loop = asyncio.get_running_loop()
        reverting: list[asyncio.Future[None]] = []

        def stop_now() -> None:
            """Stop sampling and put the originals back at once: from a stop signal, beside
            uvicorn's wait for open requests, or at the lifespan's end."""
            if reverting:
                return
            stop.set()
            app.state.sampler.interrupt_maintenance()
            reverting.append(asyncio.ensure_future(asyncio.to_thread(tuner.shutdown)))

        _on_stop_signals(lambda: loop.call_soon_threadsafe(stop_now))
        yield
        stop_now()
        await reverting[0]
        await asyncio.gather(*tasks)
        for connection in (tuner.conn, notifier.conn, deliverer.conn, conn):
            connection.close()

    # The schema and its page are routes of their own, so that they need a login when reading
    # does (routes/docs.py).
    app = FastAPI(
        title="mdboost", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.settings = settings
    app.state.host = Host(settings.proc_root, settings.sys_root)
    # Wall time whose differences are monotonic; the sampler's ticks catch the wall's steps.
    app.state.clock = fixed_rate(sim.clock) if sim is not None else Timeline()
    app.state.login_throttle = Throttle()  # wrong passwords
    app.state.bearer_throttle = Throttle()  # wrong bearer tokens
    app.state.sessions_accepted = True
    app.state.samples_cache = TickCache()  # GET /api/arrays/{name}/samples, per tick
    app.add_middleware(
        LoadLimit,
        max_active=settings.max_active_requests,
        max_waiting=settings.max_queued_requests,
        owner=carries_credentials,
    )
    # Outside the load limit: its owner check and the route share one connection.
    app.add_middleware(RequestConnections, path=settings.db)
    app.add_middleware(HostGuard, allowed=HostAllowList(settings.allowed_hosts))
    app.add_middleware(
        GuardMiddleware,
        max_body_bytes=settings.max_body_bytes,
        body_seconds=settings.body_timeout_seconds,
    )
    app.add_middleware(ForwardedMiddleware, proxies=TrustedProxies(settings.forwarded_allow_ips))
    errors.install(app)
    for module in (health, auth, notify):
        app.include_router(module.router)
    for module in (arrays, runs, tuning, schedules, pages, plan, forecast, docs, metrics):
        app.include_router(module.router, dependencies=[Depends(require_reader)])
    return app


def _open_store(settings: Settings) -> tuple[db.Connection, opening.MovedAside | None]:
    """Refuse a file from a newer mdboost untouched; move a damaged one aside and start afresh
    (the page then says so, until the owner deals with it: the move is kept as an event)."""
    opening.refuse_newer(settings.db, settings.migrations_dir)  # first: not even a chmod
    moved = opening.move_aside_if_damaged(settings.db)
    db.make_private(settings.db)
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    if moved is not None:
        moved = opening.salvage_history(moved, conn)
        detail = {"path": str(moved.path), "reason": moved.reason, "salvaged": moved.salvaged}
        with db.write_transaction(conn):
            add_event(conn, moved.ts, None, None, "database_moved_aside", detail)
    return conn, moved


SignalHandler = Callable[[int, FrameType | None], object]


def _on_stop_signals(callback: Callable[[], object]) -> None:
    """Call `callback` first when a stop signal arrives, then the handler uvicorn installed
    (which stops serving). Only the main thread may set handlers: an app run by a test client
    in a thread of its own reverts at the lifespan's end instead."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(number)
        if not callable(previous):
            continue

        def handler(sig: int, frame: FrameType | None, previous: SignalHandler = previous) -> None:
            callback()
            previous(sig, frame)

        signal.signal(number, handler)


def _interval(settings: Settings) -> Callable[[Tick], float]:
    def next_interval(tick: Tick) -> float:
        return sampler.interval_seconds(
            tick,
            settings.sample_seconds,
            settings.busy_sample_seconds,
            settings.idle_sample_seconds,
        )

    return next_interval
