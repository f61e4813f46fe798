"""kill -9 during apply, revert and auto-tune, over and over: how many knobs does a crash leave
changed?

Each trial runs `mdboost serve` on a fresh temporary kernel tree (md2 reshaping, DSM-like knob
values), kills it with SIGKILL in the middle of a boost or of a revert, starts it again and
looks at the kernel tree. Kill points: the six in-process crash points of
app/tuning/session/apply.py
(MDBOOST_TEST_CRASH_AT), and a SIGKILL sent from outside at a random moment after the request.
"autotune:random" runs `mdboost demo` instead (its reshape moves, so a sweep steps on) and kills
it at a random moment of an auto-tune sweep; after the restart every knob must be back.

After the restart a session must be either reverted (every knob at its original) or resumed
(every knob at the boost's value: the kill came after the apply finished). A knob that is
neither counts as "inconsistent"; after a final revert, a knob not at its original counts as
"left changed". A benchmark prints figures; it asserts nothing.

    .venv/bin/python scripts/crash_trials.py --trials 80
    .venv/bin/python scripts/crash_trials.py --trials 12 --modes autotune:random
    .venv/bin/python scripts/crash_trials.py --trials 6 --modes journal:damaged stop:maintenance

"journal:damaged" boosts, kills -9, zeroes the tuning journal's table (tuning_knobs) in the
database and starts again: the damaged file is moved aside, and the originals must come back
from their own file. "stop:maintenance" boosts over a database holding a month of 5 s samples,
sends SIGTERM in the middle of the hourly maintenance and times the exit (compose kills at 15 s).
"""

import argparse
import contextlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kernel_tree import KernelTree, act_like_md, syncing_box
from tests.server import Server, tree_server, wait_for
from tests.test_stop_server import month_of_samples
from tests.tuning.test_originals_server import zero_table_page

TOKEN = {
    "MDBOOST_API_TOKEN": "crash-trials-token-0123456789abcdef0123456789",
    "MDBOOST_MAX_CACHE_MB": "1024",
}
KNOBS = (
    "sys/block/md2/md/stripe_cache_size",
    "sys/block/md2/md/sync_speed_min",
    "sys/block/md2/md/sync_speed_max",
    "sys/block/md2/queue/read_ahead_kb",
)
MODES = (
    "apply:after_journal",
    "apply:mid_write",
    "apply:after_write",
    "apply:random",
    "revert:revert_after_journal",
    "revert:revert_mid_write",
    "revert:revert_after_write",
    "revert:random",
    "autotune:random",
    "journal:damaged",
    "stop:maintenance",
)
SWEEP_KNOBS = ("tree/sys/block/md2/md/stripe_cache_size", "tree/sys/block/md2/queue/read_ahead_kb")
# Auto-tune's steps in simulated seconds at 100x: a whole sweep takes ~30 s of wall time.
SWEEP_STEPS = {
    "MDBOOST_SAMPLE_SECONDS": "0.1",
    "MDBOOST_AUTOTUNE_SETTLE_SECONDS": "20",
    "MDBOOST_AUTOTUNE_MEASURE_SECONDS": "150",
    "MDBOOST_AUTOTUNE_MAX_MEASURE_SECONDS": "300",
}


def server(tree: KernelTree, data: Path, **env: str) -> Server:
    return tree_server(tree, data, **TOKEN, **env)


def kill_during(running: Server, method: str, path: str, body: object, delay: float) -> None:
    """Send the request; SIGKILL the server `delay` s later unless a crash point did first."""
    assert running.process is not None
    sender = threading.Thread(target=lambda: _quiet_request(running, method, path, body))
    sender.start()
    try:
        running.process.wait(timeout=delay)  # a crash point kills it sooner
    except subprocess.TimeoutExpired:
        running.kill()
    sender.join(timeout=15)


def _quiet_request(running: Server, method: str, path: str, body: object) -> None:
    with contextlib.suppress(OSError):  # the server died under the request, as intended
        running.request(method, path, body)


def autotune_trial(rng: random.Random, workdir: Path) -> dict[str, object]:
    """kill -9 at a random moment of a sweep on the demo box, start again, look at its knobs."""

    def demo() -> Server:
        args = ["demo", "--speedup", "100", "--state-dir", str(workdir)]
        return Server(args, env=SWEEP_STEPS, log=workdir / "server.log")

    victim = demo().start()
    wait_for(lambda: victim.get("/api/runs")["runs"], 30, "md2's run")
    before = {k: (workdir / k).read_text() for k in SWEEP_KNOBS}
    kill_during(victim, "POST", "/api/autotune", {}, rng.uniform(0.2, 20.0))
    written_at_kill = sum((workdir / k).read_text() != before[k] for k in SWEEP_KNOBS)
    with demo() as again:
        outcome = "resumed" if again.get("/api/tuning")["active"] else "reverted"
        inconsistent = sum((workdir / k).read_text() != before[k] for k in SWEEP_KNOBS)
        again.request("POST", "/api/revert", {})
    left_changed = sum((workdir / k).read_text() != before[k] for k in SWEEP_KNOBS)
    return {
        "written_at_kill": written_at_kill,
        "outcome": outcome,
        "inconsistent": inconsistent,
        "left_changed": left_changed,
    }


def damaged_journal_trial(workdir: Path) -> dict[str, object]:
    """Boost, kill -9, zero the page of tuning_knobs, start again, revert: knobs left changed?"""
    tree = KernelTree(workdir / "kernel")
    syncing_box(tree)
    before = tree.snapshot()
    victim = server(tree, workdir).start()
    victim.request("POST", "/api/boost", {"on": True})
    victim.kill()
    written_at_kill = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    zero_table_page(workdir / "data" / "mdboost.db", "tuning_knobs")
    with server(tree, workdir) as again:
        outcome = "resumed" if again.get("/api/tuning")["active"] else "reverted"
        again.request("POST", "/api/revert", {})
    act_like_md(tree, before)
    left_changed = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    return {
        "written_at_kill": written_at_kill,
        "outcome": outcome,
        "inconsistent": 0,
        "left_changed": left_changed,
    }


def maintenance_stop_trial(rng: random.Random, workdir: Path) -> dict[str, object]:
    """SIGTERM at a random moment of a month's maintenance, boost on: exit time, knobs left."""
    tree = KernelTree(workdir / "kernel")
    syncing_box(tree)
    before = tree.snapshot()
    database = workdir / "data" / "mdboost.db"
    database.parent.mkdir(mode=0o700)
    month_of_samples(database, time.time())
    log = workdir / "server.log"
    victim = server(tree, workdir, MDBOOST_SAMPLE_SECONDS="1").start()
    victim.request("POST", "/api/boost", {"on": True})
    wait_for(lambda: "maintenance: thinning" in log.read_text(), 60, "the maintenance")
    assert victim.process is not None
    with contextlib.suppress(subprocess.TimeoutExpired):
        victim.process.wait(timeout=rng.uniform(0.0, 2.0))  # a random moment of it
    began = time.monotonic()
    victim.process.send_signal(signal.SIGTERM)
    try:
        victim.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        victim.kill()
    exit_s = time.monotonic() - began
    act_like_md(tree, before)
    left_changed = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    return {
        "written_at_kill": len(KNOBS),
        "outcome": f"exit {exit_s:.2f} s",
        "inconsistent": 0,
        "left_changed": left_changed,
        "exit_s": exit_s,
    }


def trial(mode: str, rng: random.Random, workdir: Path) -> dict[str, object]:
    operation, _, point = mode.partition(":")
    if operation == "autotune":
        return autotune_trial(rng, workdir)
    if operation == "journal":
        return damaged_journal_trial(workdir)
    if operation == "stop":
        return maintenance_stop_trial(rng, workdir)
    tree = KernelTree(workdir / "kernel")
    syncing_box(tree)
    before = tree.snapshot()
    data = workdir  # the database goes to workdir/data, the log beside it
    if operation == "revert":
        first = server(tree, data).start()
        first.request("POST", "/api/boost", {"on": True})
        first.kill()  # the boost stays in the kernel; the next start resumes it
    crash_env = {} if point == "random" else {"MDBOOST_TEST_CRASH_AT": point}
    victim = server(tree, data, **crash_env).start()
    delay = rng.uniform(0.0, 0.08) if point == "random" else 10.0
    if operation == "apply":
        kill_during(victim, "POST", "/api/boost", {"on": True}, delay)
    else:
        kill_during(victim, "POST", "/api/revert", {}, delay)
    act_like_md(tree, before)
    written_at_kill = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    with server(tree, data) as again:
        tuning = again.get("/api/tuning")
        if tuning["active"]:
            outcome = "resumed"
            inconsistent = sum(1 for k in tuning["knobs"] if k["drift"])
            again.request("POST", "/api/revert", {})
        else:
            outcome = "reverted"
            act_like_md(tree, before)
            inconsistent = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    act_like_md(tree, before)
    left_changed = sum(tree.read(k) != before[k].decode() for k in KNOBS)
    return {
        "written_at_kill": written_at_kill,
        "outcome": outcome,
        "inconsistent": inconsistent,
        "left_changed": left_changed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=80)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--modes", nargs="*", choices=MODES, default=MODES, help="kill points")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    by_mode: dict[str, list[dict[str, object]]] = {mode: [] for mode in args.modes}
    for number in range(args.trials):
        mode = args.modes[number % len(args.modes)]
        with tempfile.TemporaryDirectory(prefix="mdboost-crash-") as tmp:
            by_mode[mode].append(trial(mode, rng, Path(tmp)))
    total_inconsistent = total_left = 0
    print(f"{args.trials} kill -9 trials (seed {args.seed})")
    print(
        f"{'kill point':30} {'trials':>6}  {'knobs changed at kill':22} {'after restart':22} "
        f"{'inconsistent':>12} {'left changed':>12}"
    )
    for mode, results in by_mode.items():
        written = Counter(int(str(r["written_at_kill"])) for r in results)
        exits = [float(str(r["exit_s"])) for r in results if "exit_s" in r]
        outcomes = Counter(str(r["outcome"]) for r in results if "exit_s" not in r)
        if exits:
            outcomes = Counter({f"exit max {max(exits):.2f} s": len(exits)})
        inconsistent = sum(int(str(r["inconsistent"])) for r in results)
        left = sum(int(str(r["left_changed"])) for r in results)
        total_inconsistent += inconsistent
        total_left += left
        print(
            f"{mode:30} {len(results):6}  {dict(sorted(written.items()))!s:22} "
            f"{dict(sorted(outcomes.items()))!s:22} {inconsistent:12} {left:12}"
        )
    print(f"knobs inconsistent after restart: {total_inconsistent}; left changed: {total_left}")


if __name__ == "__main__":
    main()
