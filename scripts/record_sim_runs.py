"""Record simulated reshapes as CSV runs for the forecast backtest.

    .venv/bin/python scripts/record_sim_runs.py [--out tests/fixtures/runs] [--seed-offset 0]

Each scenario drives app/simulator/box.py headless from start to finish, changing knobs the way a
user or mdboost would, and writes one CSV: ts,done,total,finish_min,event,knee. `finish_min` is
the kernel-style finish= parsed from the simulated /proc/mdstat; `event` names a tuning change
("apply", "revert") on the row sampled at that moment; `knee` is the grow's knee (2/3 for the
simulated 3->4 raid5). The simulator's own competing-I/O bursts run throughout.
The "zones" scenarios add HDD physics the simulator lacks: speed_limit_max follows a curve that
falls 45 % from the outer to the inner tracks (not a tuning event, so not marked).
Committed fixtures use --seed-offset 0; the forecast's parameters were tuned on other offsets.
"""

import argparse
import csv
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from app.kernel import mdstat_parse
from app.simulator.box import Simulator
from app.simulator.layout import (
    NEW_DATA_DISKS,
    OLD_DATA_DISKS,
    RESHAPE_TOTAL_BLOCKS,
    cache_speed_mb_s,
)

EPOCH = 1_700_000_000  # fixtures start here, whatever the wall clock says
SAMPLE_S = 60.0
CACHE = "sys/block/md2/md/stripe_cache_size"
LIMIT_MIN = "proc/sys/dev/raid/speed_limit_min"
LIMIT_MAX = "proc/sys/dev/raid/speed_limit_max"
BOOST = {CACHE: "16384", LIMIT_MIN: "50000"}
MILD = {CACHE: "4096"}
ORIGINAL = {CACHE: "256", LIMIT_MIN: "10000"}
KNEE = OLD_DATA_DISKS / NEW_DATA_DISKS


@dataclass
class Step:
    """Write `knobs` once the run is `after_s` old or has reached `at_progress`."""

    event: str
    knobs: dict[str, str]
    after_s: float | None = None
    at_progress: float | None = None


@dataclass
class Scenario:
    name: str  # <class>-<letter>: the backtest groups runs by class
    start_percent: float
    knobs: dict[str, str] = field(default_factory=dict)  # set before the run, not events
    steps: list[Step] = field(default_factory=list)
    zones: bool = False


SCENARIOS = [
    Scenario("steady-a", 12.0),
    Scenario("steady-b", 0.0),
    Scenario("bursts-a", 12.0, knobs={CACHE: "16384"}),
    Scenario("bursts-b", 30.0, knobs={CACHE: "4096"}),
    Scenario("changes-a", 12.0, steps=[Step("apply", BOOST, after_s=3600)]),
    Scenario(
        "changes-b",
        5.0,
        steps=[
            Step("apply", BOOST, after_s=3 * 3600),
            Step("revert", ORIGINAL, at_progress=0.45),
            Step("apply", BOOST, at_progress=0.55),
        ],
    ),
    Scenario(
        "changes-c",
        12.0,
        steps=[Step("apply", MILD, after_s=1800), Step("apply", BOOST, at_progress=0.35)],
    ),
    Scenario("zones-a", 0.0, knobs={CACHE: "16384"}, zones=True),
]


def zone_limit_kb_s(cache: int, progress: float) -> int:
    """HDD-like ceiling: 90 % of the simulated capacity, falling 45 % towards the inner tracks."""
    capacity = cache_speed_mb_s(cache) * 1000 * 1000 / 1024
    if progress >= KNEE:
        capacity *= 3.0
    return int(0.9 * capacity * (1 - 0.45 * progress))


def record(scenario: Scenario, seed: int, out: Path) -> Path:
    # The simulator rewrites its tree on every step: keep it in memory when the machine can.
    shm = Path("/dev/shm")
    scratch = str(shm) if shm.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="mdboost-sim-", dir=scratch) as tmp:
        root = Path(tmp)
        sim = Simulator(root, seed=seed, start_percent=scenario.start_percent)
        for relative, value in scenario.knobs.items():
            (root / relative).write_text(value + "\n")
        start = sim.state.sim_time
        rows: list[list[object]] = []
        pending = list(scenario.steps)

        def sample(event: str = "") -> None:
            parsed = mdstat_parse.parse((root / "proc/mdstat").read_text())
            sync = parsed.array("md2").sync if parsed.array("md2") else None
            finish = sync.finish_min if sync is not None and sync.running else None
            ts = round(sim.state.sim_time - start + EPOCH, 1)
            done = min(int(sim.state.done_blocks), RESHAPE_TOTAL_BLOCKS)
            rows.append([ts, done, RESHAPE_TOTAL_BLOCKS, finish, event, f"{KNEE:.4f}"])

        def due(step: Step) -> bool:
            progress = sim.state.done_blocks / RESHAPE_TOTAL_BLOCKS
            if step.after_s is not None and sim.state.sim_time - start >= step.after_s:
                return True
            return step.at_progress is not None and progress >= step.at_progress

        def write(relative: str, value: str) -> None:
            (root / relative).write_text(value + "\n")

        sample()
        next_row = start + SAMPLE_S
        while not sim.finished:
            for step in [s for s in pending if due(s)]:
                pending.remove(step)
                for relative, value in step.knobs.items():
                    write(relative, value)
                sim.write_status()
                sample(step.event)
            if scenario.zones:
                cache = int((root / CACHE).read_text().split()[0])
                progress = sim.state.done_blocks / RESHAPE_TOTAL_BLOCKS
                write(LIMIT_MAX, str(zone_limit_kb_s(cache, progress)))
            # Near the end, 3 s steps: the true finish must be known to the second.
            near_end = RESHAPE_TOTAL_BLOCKS - sim.state.done_blocks < 300_000 * SAMPLE_S
            sim.advance(3.0 if near_end else SAMPLE_S)
            if sim.finished:
                break
            if sim.state.sim_time >= next_row - 1e-6:
                sample()
                next_row += SAMPLE_S
        # The run ended within the last step: that moment is the true finish.
        rows.append(
            [round(sim.state.sim_time - start + EPOCH, 1), RESHAPE_TOTAL_BLOCKS,
             RESHAPE_TOTAL_BLOCKS, None, "", f"{KNEE:.4f}"]
        )  # fmt: skip
    path = out / f"sim-{scenario.name}.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ts", "done", "total", "finish_min", "event", "knee"])
        writer.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/runs"))
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--only", help="record only the scenarios whose name contains this")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for number, scenario in enumerate(SCENARIOS, start=1):
        if args.only and args.only not in scenario.name:
            continue
        path = record(scenario, args.seed_offset + number, args.out)
        lines = sum(1 for _ in path.open()) - 1
        print(f"{path}: {lines} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
