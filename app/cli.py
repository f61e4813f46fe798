"""The `mdboost` command: serve, demo, parse (and what later features add)."""

import argparse
import contextlib
import json
import logging.config
import os
import secrets
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from app import heap
from app.config import Settings, problems
from app.forecast import replay
from app.kernel import mdstat_parse
from app.logs import LOG_CONFIG
from app.resources import MissingDataDir
from app.store import db, opening

if TYPE_CHECKING:  # the demo's box loads only for the demo: a real box never pays its RSS
    from app.simulator import Simulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mdboost", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the real arrays of this machine")
    _add_listen_args(serve, "0.0.0.0")

    demo = commands.add_parser("demo", help="serve a simulated Synology box with a reshape")
    # This machine only, unless asked: its boost is open to anyone who reaches it.
    _add_listen_args(demo, "127.0.0.1")
    demo.add_argument("--speedup", type=float, default=1.0, help="simulated seconds per second")
    demo.add_argument(
        "--state-dir", type=Path, help="keep the simulated tree here (default: a new temp dir)"
    )

    parse = commands.add_parser("parse", help="print /proc/mdstat (or FILE, - for stdin) as JSON")
    parse.add_argument("file", nargs="?", default=None)

    forecast = commands.add_parser("forecast", help="replay the ETA over a recorded run (CSV)")
    replay.add_arguments(forecast)

    backup = commands.add_parser(
        "backup", help="copy the database (MDBOOST_DB) to PATH, consistently, while mdboost runs"
    )
    backup.add_argument("path", type=Path)

    args = parser.parse_args(argv)
    logging.config.dictConfig(LOG_CONFIG)
    try:
        if args.command == "parse":
            return _parse(args.file)
        if args.command == "forecast":
            return replay.run(args)
    except BrokenPipeError:
        # `mdboost parse | head` closed the pipe: not an error (Python docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    try:
        if args.command == "demo":
            return _demo(args)
        if args.command == "backup":
            return _backup(Settings().db, args.path)
        return _serve(Settings(), args.host, args.port)
    except ValidationError as error:
        _print_bad_settings(error)
        return 2


def _print_bad_settings(error: ValidationError) -> None:
    """Each bad MDBOOST_* setting with what is wrong, never its value (it may be a secret)."""
    for name, message in problems(error):
        print(f"mdboost: cannot start: {name}: {message}", file=sys.stderr)


def _add_listen_args(command: argparse.ArgumentParser, host: str) -> None:
    command.add_argument("--host", default=host, help=f"address to listen on (default {host})")
    command.add_argument("--port", type=int, default=8080)


def _parse(file: str | None) -> int:
    if file == "-":
        text = sys.stdin.read()
    else:
        path = Path(file) if file else Settings().proc_root / "mdstat"
        try:
            text = path.read_text(errors="replace")
        except OSError as error:
            print(f"mdboost parse: cannot read {path}: {error.strerror}", file=sys.stderr)
            return 2
    try:
        parsed = mdstat_parse.parse(text)
    except ValueError as error:
        print(f"mdboost parse: {error}", file=sys.stderr)
        return 1
    for warning in parsed.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(json.dumps(parsed.to_json(), indent=2))
    return 0


def _backup(source: Path, target: Path) -> int:
    """SQLite's online backup API: a consistent copy while the server writes (app/store)."""
    if target.is_dir():
        target = target / source.name
    try:
        size = opening.backup(source, target)
    except (OSError, db.Error) as error:
        print(f"mdboost backup: cannot copy {source} to {target}: {error}", file=sys.stderr)
        return 1
    print(f"mdboost backup: copied {source} to {target} ({size / 1e6:.1f} MB)")
    return 0


EFFECT_WINDOW_SAMPLES = 10  # the demo's effect windows hold about this many samples


def _demo(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir or Path(tempfile.mkdtemp(prefix="mdboost-demo-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    from app.simulator import Simulator  # the demo's box, loaded for the demo only

    sim = Simulator(state_dir / "tree", speedup=args.speedup)
    overrides: dict[str, Any] = {
        "proc_root": state_dir / "tree" / "proc",
        "sys_root": state_dir / "tree" / "sys",
        "demo": True,
    }
    defaults = Settings()
    if "db" not in defaults.model_fields_set:
        overrides["db"] = state_dir / "mdboost.db"
    sample_s = defaults.sample_seconds or 0.0
    if defaults.sample_seconds is None and args.speedup > 1:
        # Keep ~5 simulated seconds between samples (at least 0.5 s of real time), so charts
        # and the before/after effect windows get enough points when time runs faster.
        sample_s = overrides["sample_seconds"] = max(
            0.5, defaults.busy_sample_seconds / args.speedup
        )
    if "effect_minutes" not in defaults.model_fields_set:
        # Each before/after window must hold samples: at 300x a sample 0.5 s apart is 2.5
        # simulated minutes, and boost's effect read "not enough samples to measure".
        window_min = EFFECT_WINDOW_SAMPLES * sample_s * args.speedup / 60
        overrides["effect_minutes"] = max(defaults.effect_minutes, window_min)
    if defaults.password is None:
        # The open demo: anyone may boost it, but a notification destination makes this host
        # send requests, and a token outlives the visit: those need this password.
        password = secrets.token_urlsafe(12)
        overrides |= {"password": password, "demo_open": True}
    settings = Settings(**overrides)
    log = logging.getLogger("mdboost")
    if defaults.password is None:
        # In the one log format (app/logs.py), like every other line the demo writes; this is
        # the simulated box's own throw-away password, which its user must be able to read.
        log.warning(
            "demo: boost and auto-tune are open to anyone who reaches this page; "
            "notifications and API tokens need the admin password %s",
            password,
        )
    log.info("simulated box in %s (x%s speed)", state_dir, args.speedup)
    return _serve(settings, args.host, args.port, sim)


def _serve(settings: Settings, host: str, port: int, sim: "Simulator | None" = None) -> int:
    import uvicorn

    from app.main import create_app
    from app.web.connections import ConnectionRules, QuietServer
    from app.web.proxy import TrustedProxies

    heap.one_arena()  # before the server's threads: one malloc arena, not one per thread (heap.py)
    try:
        # Before anything opens the file: a refused one stays as the newer version left it.
        opening.refuse_newer(settings.db, settings.migrations_dir)
        # Then one server per database, before the app reads or writes a kernel knob; held
        # until this process ends.
        held = opening.lock_server(settings.db)
        app = create_app(settings, sim)
    except (MissingDataDir, opening.NewerDatabase, opening.AnotherServer) as error:
        print(f"mdboost: cannot start: {error}", file=sys.stderr)
        return 2
    rules = ConnectionRules(
        head_seconds=settings.header_timeout_seconds,
        max_connections=settings.max_connections,
        per_client=settings.max_connections_per_client,
        proxies=TrustedProxies(settings.forwarded_allow_ips),
    )
    # proxy_headers=False: the app reads X-Forwarded-* itself, trusting FORWARDED_ALLOW_IPS
    # hop by hop (app/web/proxy.py), where uvicorn would take a client-written entry with `*`.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=LOG_CONFIG,
        timeout_graceful_shutdown=5,
        proxy_headers=False,
        # A backstop only: the rules below keep to max_connections, making room fairly, where
        # uvicorn's own limit would answer 503 to whoever came last.
        limit_concurrency=2 * settings.max_connections,
        http=rules.protocol(),  # a head deadline and a cap per address (web/connections.py)
    )
    server = QuietServer(config)  # uvicorn.run's Server, without its 0.1 s tick
    # SIGHUP (a closed terminal, `kill -HUP`) stops mdboost as SIGTERM does, reverting first:
    # its default would end the process at once with the boost left in the kernel.
    signal.signal(signal.SIGHUP, lambda _sig, frame: server.handle_exit(signal.SIGTERM, frame))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
    finally:
        held.release()
    return 0 if server.started else STARTUP_FAILURE


STARTUP_FAILURE = 3  # uvicorn.run's exit code when the app never started (its lifespan failed)
