"""Guest scenario: the real mdboost server on the real kernel, driven over HTTP from inside the VM.

`api_scenarios.py smoke` runs the short set the other kernels get in CI: a RAID5 3->4
reshape with boost, kill -9, restart and revert after the reshape ended (md's read-ahead floor),
then a RAID5 that lost two members and a RAID0 whose member disk was unplugged, each of which must
show as failed in the API, on the page, in /metrics and as a notification. The full scenario ends
with the same failed arrays.

Runs as root. The full scenario, in one boot: RAID5 create (recovery), check, fail and re-add
(recovery), RAID6 and RAID1+bitmap resyncs, then a RAID5 3->4 reshape where boost must raise the
speed, revert must restore every knob, a kernel refusal must roll back cleanly, and a kill -9 of
the server mid-boost must still end in the originals. Results go to $OUT/facts.json; the
host-side test (tests/realkernel/test_api_on_real_kernel.py) asserts on them.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mdguest import (
    DISKS,
    OUT,
    main,
    md_path,
    mdstat,
    mdstat_block,
    read,
    record,
    say,
    set_speed_limits,
    sh,
    snapshot,
    stop_all,
    wait_for,
    wait_idle,
    wait_progress_line,
    wipe,
)

from app.kernel.mdstat_parse import parse

REPO = Path(os.environ["REPO"])
PORT = 8080
DATA = Path("/tmp/mdboost")
DB = DATA / "mdboost.db"
SMALL = "--size=131072"  # KiB per member: short syncs for the sampling scenarios
STOCK_LIMITS = (1000, 2000)
TOKEN = "realkernel-test-token-0123456789abcdef0123456789"  # MDBOOST_API_TOKEN: changes need an admin  # KiB/s: a throttled NAS, so that boost has something to lift


class Server:
    """`mdboost serve` as a child process, as a user (or the container) would run it."""

    def __init__(self, sample_s: str = "1", effect_minutes: str = "0.25") -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.sample_s = sample_s  # the sampler's tick, s
        self.effect_minutes = effect_minutes  # the before/after windows of a change

    def start(self) -> None:
        self.starts += 1
        env = dict(
            os.environ,
            MDBOOST_DB=str(DB),
            MDBOOST_SAMPLE_SECONDS=self.sample_s,
            MDBOOST_EFFECT_MINUTES=self.effect_minutes,
            MDBOOST_API_TOKEN=TOKEN,
            # a destination nobody listens on: the outbox row is the notification's proof
            MDBOOST_NOTIFY="ntfy+http://127.0.0.1:9/mdboost-realkernel",
        )
        log = (OUT / f"server-{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(
            [REPO / ".venv/bin/mdboost", "serve", "--host", "127.0.0.1", "--port", str(PORT)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started = time.monotonic()
        wait_for(self.healthy, "mdboost to answer /healthz", 240, 0.2)
        say(f"server {self.starts} up in {time.monotonic() - started:.1f} s")
        record(f"server_start_{self.starts}_s", round(time.monotonic() - started, 1))

    def healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"mdboost serve exited with {self.proc.returncode}")
        try:
            return call("GET", "/healthz")[0] == 200
        except OSError:
            return False

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=60)


def get_text(path: str) -> str:
    """A page or /metrics as text (an admin's view)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{PORT}{path}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def call(method: str, path: str, body: Any = None, token: str | None = TOKEN) -> tuple[int, Any]:
    """One HTTP request to the server; returns (status, decoded JSON body)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"http://127.0.0.1:{PORT}{path}", data=data, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def api(method: str, path: str, body: Any = None, expect: int = 200) -> Any:
    status, answer = call(method, path, body)
    if status != expect:
        raise AssertionError(f"{method} {path} -> {status}, expected {expect}: {answer}")
    return answer


def api_array(name: str) -> dict[str, Any] | None:
    return next((a for a in api("GET", "/api/arrays")["arrays"] if a["name"] == name), None)


def api_action(name: str) -> str | None:
    array = api_array(name)
    return (array["sync"] or {}).get("action") if array else None


def capture(state: str, arrays: list[str]) -> None:
    """Fixture tree plus what the API says at the same moment (checked against mdadm on the host)."""
    views = api("GET", "/api/arrays")
    root = snapshot(state, arrays)
    (root / "api-arrays.json").write_text(json.dumps(views, indent=1))


def finished_runs(name: str) -> list[dict[str, Any]]:
    return [r for r in api("GET", f"/api/runs?array={name}")["runs"] if r["finished"]]


def wait_run_finished(name: str, action: str, count: int = 1) -> None:
    wait_for(
        lambda: sum(r["action"] == action for r in finished_runs(name)) >= count,
        f"{count} finished {action} run(s) of {name} in /api/runs",
        60,
        0.5,
    )


# ---- sampling scenarios -------------------------------------------------------------------
def crawl() -> None:
    """Hold syncs at 1 MB/s so a capture reads mdstat, sysfs and mdadm in the same state."""
    set_speed_limits(1000, 1000)


def run_free() -> None:
    """Let it finish (the small arrays take seconds at this speed)."""
    set_speed_limits(1000, 20000)


def past_first_checkpoint(md: str) -> bool:
    """sync_completed shows md's checkpoint (curr_resync_completed), not its position."""
    done = md_path(md, "sync_completed").read_text().split("/")[0].strip()
    return done.isdigit() and int(done) > 0


def stop_a_check_midway() -> None:
    """A check stopped by hand past md's first checkpoint: md keeps where it got to in sync_min,
    and mdboost saves the run as interrupted. sync_min goes back to 0 for what follows."""
    crawl()
    md_path("md0", "sync_action").write_text("check\n")
    wait_for(lambda: api_action("md0") == "check", "the API to show md0's second check", 30)
    wait_for(lambda: past_first_checkpoint("md0"), "md0's check past md's first checkpoint", 120)
    md_path("md0", "sync_action").write_text("idle\n")
    wait_idle("md0")
    wait_run_finished("md0", "check", 2)
    record("stopped_check_sync_min", md_path("md0", "sync_min").read_text().strip())
    md_path("md0", "sync_min").write_text("0\n")


def raid5_small() -> None:
    vda, vdb, vdc = DISKS[:3]
    wipe([vda, vdb, vdc])
    crawl()
    sh(
        "mdadm",
        "--create",
        "/dev/md0",
        "--run",
        "--level=5",
        "--raid-devices=3",
        SMALL,
        vda,
        vdb,
        vdc,
    )
    wait_for(lambda: api_action("md0") == "recovery", "the API to show md0 recovering", 30)
    capture("api-raid5-recovery", ["md0"])
    run_free()
    wait_idle("md0")
    wait_run_finished("md0", "recovery")

    crawl()
    md_path("md0", "sync_action").write_text("check\n")
    wait_for(lambda: api_action("md0") == "check", "the API to show md0 checking", 30)
    capture("api-raid5-check", ["md0"])
    run_free()
    wait_idle("md0")
    wait_run_finished("md0", "check")
    stop_a_check_midway()

    sh("mdadm", "/dev/md0", "--fail", vdc)
    wait_for(lambda: "(F)" in mdstat_block("md0"), "vdc (F)")
    sh("mdadm", "/dev/md0", "--remove", vdc)
    # degraded already shows while vdc is (F): wait for the tick that saw it leave, or the
    # capture races the sampler (seen at load 30: the API still listed vdc)
    gone = Path(vdc).name
    wait_for(
        lambda: (
            (a := api_array("md0") or {}).get("degraded")
            and gone not in [d["name"] for d in a["devices"]]
        ),
        "the API to show md0 degraded without vdc",
    )
    capture("api-raid5-degraded", ["md0"])
    wipe([vdc])
    crawl()
    sh("mdadm", "/dev/md0", "--add", vdc)
    wait_for(lambda: api_action("md0") == "recovery", "the API to show md0 recovering again", 30)
    capture("api-raid5-readd-recovery", ["md0"])
    run_free()
    wait_idle("md0")
    wait_run_finished("md0", "recovery", 2)
    stop_all()


def raid6_and_raid1_bitmap() -> None:
    wipe(DISKS)
    crawl()
    sh("mdadm", "--create", "/dev/md6", "--run", "--level=6", "--raid-devices=4", SMALL, *DISKS[:4])
    sh(
        "mdadm",
        "--create",
        "/dev/md1",
        "--run",
        "--level=1",
        "--raid-devices=2",
        SMALL,
        "--bitmap=internal",
        *DISKS[4:6],
    )
    wait_for(
        lambda: api_action("md6") == "resync" and api_action("md1") == "resync",
        "the API to show md6 and md1 resyncing",
        30,
    )
    capture("api-raid6-and-raid1-bitmap-resync", ["md1", "md6"])
    run_free()
    wait_idle("md6")
    wait_idle("md1")
    wait_run_finished("md6", "resync")
    wait_run_finished("md1", "resync")
    stop_all()


# ---- tuning on a real reshape ---------------------------------------------------------------
def knob_files() -> dict[str, Path]:
    """Every file a preset may touch for md0 (and the globals), by a readable name."""
    files = {
        "speed_limit_min": Path("/proc/sys/dev/raid/speed_limit_min"),
        "speed_limit_max": Path("/proc/sys/dev/raid/speed_limit_max"),
        "read_ahead_kb": Path("/sys/block/md0/queue/read_ahead_kb"),
    }
    for attr in ("stripe_cache_size", "sync_speed_min", "sync_speed_max", "group_thread_cnt"):
        files[attr] = md_path("md0", attr)
    for member in sorted(Path("/sys/block/md0/md").glob("dev-*")):
        disk = member.name.removeprefix("dev-")
        files[f"{disk}/read_ahead_kb"] = Path(f"/sys/block/{disk}/queue/read_ahead_kb")
    return files


def knobs() -> dict[str, str]:
    return {name: read(path) for name, path in knob_files().items()}


def reshape_speed_kib_s(window_s: float = 8.0) -> float:
    """Reshape progress per second over a window, from the kernel's own mdstat counter.

    Measured here, not by mdboost. mdstat's done count moves in finer steps than sysfs
    sync_completed, which at low limits stood still for the whole of a 6 s window.
    """

    def done() -> int:
        array = parse(mdstat()).array("md0")
        if array is None or array.sync is None or array.sync.done_blocks is None:
            return 0
        return array.sync.done_blocks

    start, t0 = done(), time.monotonic()
    deadline = t0 + window_s
    while time.monotonic() < deadline:  # poll instead of one sleep: stop early if it finishes
        if read(md_path("md0", "sync_action")) != "reshape":
            break
        time.sleep(0.2)
    return (done() - start) / (time.monotonic() - t0)


def grow_raid5_3_to_4(*create_options: str) -> str:
    """A clean RAID5 of three disks at the stock limits, grown to four until the API shows the
    reshape; returns the stripe cache before mdadm's grow raised it."""
    vda, vdb, vdc, vdd = DISKS[:4]
    wipe(DISKS)
    set_speed_limits(*STOCK_LIMITS)
    create = ["mdadm", "--create", "/dev/md0", "--run", "--level=5", "--raid-devices=3"]
    sh(*create, *create_options, "--assume-clean", vda, vdb, vdc)
    sh("mdadm", "/dev/md0", "--add", vdd)
    cache_before_grow = read(md_path("md0", "stripe_cache_size"))
    sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4")
    wait_progress_line("md0", "reshape")
    wait_for(lambda: api_action("md0") == "reshape", "the API to show md0 reshaping", 30)
    return cache_before_grow


def reshape_with_tuning(server: Server) -> None:
    cache_before_grow = grow_raid5_3_to_4()
    capture("api-raid5-reshape", ["md0"])
    originals = knobs()
    record("knobs_original", originals)
    record("stripe_cache_size_mdadm_grow", [cache_before_grow, originals["stripe_cache_size"]])

    # without the admin token nothing is written
    status, _ = call("POST", "/api/boost", {"on": True}, token=None)
    record("boost_without_token", {"status": status, "knobs": knobs()})

    # boost: the kernel's values change and the speed rises
    before = reshape_speed_kib_s()
    answer = api("POST", "/api/boost", {"on": True})
    boosted = knobs()
    reshape_speed_kib_s(2.0)  # let the new limits take hold
    after = reshape_speed_kib_s()
    record(
        "boost", {"answer": answer, "knobs": boosted, "before_kib_s": before, "after_kib_s": after}
    )
    record("tuning_while_boosted", api("GET", "/api/tuning"))
    say(f"boost: {before:.0f} -> {after:.0f} KiB/s")

    # revert: every knob back to what it was
    record("revert", {"answer": api("POST", "/api/boost", {"on": False}), "knobs": knobs()})

    # a kernel refusal: md0's read_ahead_kb on a read-only mount (as in a container whose /sys
    # is read-only) answers EROFS to the last write of the boost; what was written rolls back.
    target = str(Path("/sys/block/md0/queue/read_ahead_kb").resolve())
    sh("mount", "--bind", target, target)
    sh("mount", "-o", "remount,bind,ro", target)
    try:
        status, refused = call("POST", "/api/presets/boost/apply")
        record("refused", {"status": status, "answer": refused, "knobs": knobs()})
    finally:
        sh("umount", target)
    record("tuning_after_refusal", api("GET", "/api/tuning"))

    # kill -9 in the middle of a boost, restart: the journal still knows the originals
    api("POST", "/api/boost", {"on": True})
    server.kill9()
    after_kill = knobs()
    server.start()
    reconciled = api("GET", "/api/tuning")
    status, reverted = call("POST", "/api/revert")
    record(
        "kill9",
        {
            "knobs_after_kill": after_kill,
            "tuning_after_restart": reconciled,
            "revert_status": status,
            "revert_answer": reverted,
            "knobs_after_revert": knobs(),
        },
    )

    set_speed_limits(1000, 200000)
    wait_idle("md0", 300)
    wait_run_finished("md0", "reshape")
    capture("api-raid5-reshaped", ["md0"])
    run = next(r for r in finished_runs("md0") if r["action"] == "reshape")
    record("reshape_run", api("GET", f"/api/runs/{run['id']}"))
    record("tuning_at_end", api("GET", "/api/tuning"))


def sqlite_facts() -> None:
    """What landed in the database file itself (read-only, beside the running server)."""
    conn = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    runs = conn.execute(
        "SELECT array, action, outcome, finished IS NOT NULL FROM runs ORDER BY id"
    ).fetchall()
    samples = dict(conn.execute("SELECT array, COUNT(*) FROM samples GROUP BY array").fetchall())
    actions = conn.execute(
        "SELECT array, action, COUNT(*) FROM samples WHERE action IS NOT NULL "
        "GROUP BY array, action"
    ).fetchall()
    events = conn.execute("SELECT kind, COUNT(*) FROM events GROUP BY kind").fetchall()
    record(
        "sqlite",
        {
            "runs": runs,
            "samples_per_array": samples,
            "samples_per_action": actions,
            "events": dict(events),
        },
    )
    conn.close()


# ---- the short set every kernel runs ---------------------------------------------------------
SMOKE_CHUNK_KB = 64  # DSM's chunk: md's read-ahead floor after the grow is 2 x 64 x 3 = 384 KiB


def smoke_reshape(server: Server) -> None:
    """Boost a real reshape, kill -9 the server while boosted, restart; at the reshape's end the
    server reverts: every knob back, read-ahead to md's new floor where the original is below it
    (md raises read-ahead to two full stripes when a grow ends, 5.10 as 6.x)."""
    grow_raid5_3_to_4(f"--chunk={SMOKE_CHUNK_KB}")
    capture("smoke-raid5-reshape", ["md0"])
    originals = knobs()
    record("knobs_original", originals)
    try:  # the host-side test judges it; the rest of the scenario runs either way
        wait_for(
            lambda: call("GET", "/api/arrays/md0/diagnosis")[1].get("verdict"),
            "a diagnosis verdict for md0 (shown once it held a minute)",
            150,
            0.5,
        )
    except TimeoutError as error:
        say(str(error))
    record("diagnosis", api("GET", "/api/arrays/md0/diagnosis"))
    before = reshape_speed_kib_s()
    answer = api("POST", "/api/boost", {"on": True})
    boosted = knobs()
    # Killed at once: a boosted reshape of small disks can end within seconds, and the live
    # server then reverts by itself before any kill (6.12, once: the test saw the originals).
    action_at_kill = read(md_path("md0", "sync_action"))
    server.kill9()
    after_kill = knobs()
    reshape_speed_kib_s(2.0)  # boosted, with no server to revert it
    after = reshape_speed_kib_s()
    record(
        "boost", {"answer": answer, "knobs": boosted, "before_kib_s": before, "after_kib_s": after}
    )
    server.start()
    reconciled = api("GET", "/api/tuning")
    # a boosted reshape of small disks may end while the server starts: then it reverts at once
    action_at_restart = read(md_path("md0", "sync_action"))
    wait_idle("md0", 600)
    # MDBOOST_REVERT_ON_FINISH (on by default): the restarted server reverts by itself
    wait_for(lambda: not api("GET", "/api/tuning")["active"], "the revert at the reshape's end", 60)
    record(
        "kill9",
        {
            "action_at_kill": action_at_kill,
            "knobs_after_kill": after_kill,
            "tuning_after_restart": reconciled,
            "action_at_restart": action_at_restart,
            "tuning_after_end": api("GET", "/api/tuning"),
            "knobs_after_revert": knobs(),
            "geometry_after": {
                "raid_disks": read(md_path("md0", "raid_disks")),
                "chunk_kb": int(read(md_path("md0", "chunk_size"))) // 1024,
            },
        },
    )
    stop_all()


def failed_view(name: str) -> dict[str, Any]:
    view = api_array(name) or {}
    return {k: view.get(k) for k in ("state", "failed", "severity", "status")}


def smoke_failed_arrays() -> None:
    """A RAID5 with two of three members failed and a RAID0 whose member disk is unplugged: both
    failed in the API, the page (headline, title, card), /metrics and the notification outbox."""
    vda, vdb, vdc = DISKS[:3]
    vde, vdf = DISKS[4:6]
    stop_all()
    wipe([vda, vdb, vdc, vde, vdf])
    set_speed_limits(1000, 200000)
    sh("mdadm", "--create", "/dev/md0", "--run", "--level=5", "--raid-devices=3", SMALL,
       "--assume-clean", vda, vdb, vdc)  # fmt: skip
    sh("mdadm", "--create", "/dev/md20", "--run", "--level=0", "--raid-devices=2", vde, vdf)
    wait_for(lambda: api_array("md0") and api_array("md20"), "the API to list md0 and md20", 30)
    sh("mdadm", "/dev/md0", "--fail", vdb)
    sh("mdadm", "/dev/md0", "--fail", vdc, check=False)  # EBUSY on 6.1 and 6.12, yet faulty
    record("raid5_array_state_at_once", read(md_path("md0", "array_state")))
    pci = Path(f"/sys/block/{Path(vdf).name}/device").resolve().parent
    (pci / "remove").write_text("1\n")
    wait_for(lambda: not Path(f"/sys/block/{Path(vdf).name}").exists(), f"{vdf} to go away")
    subprocess.run(["dd", "if=/dev/md20", "of=/dev/null", "bs=1M", "count=2", "iflag=direct"],
                   capture_output=True)  # fmt: skip
    wait_for(lambda: read(md_path("md20", "array_state")) == "broken", "md20 array_state broken")
    wait_for(
        lambda: failed_view("md0")["failed"] and failed_view("md20")["failed"],
        "the API to show md0 and md20 failed",
        30,
        0.5,
    )
    capture("failed-raid5-and-raid0", ["md0", "md20"])
    arrays_answer = api("GET", "/api/arrays")
    page = get_text("/")
    metrics = get_text("/metrics")
    record(
        "failed",
        {
            "api": {name: failed_view(name) for name in ("md0", "md20")},
            "api_failed": arrays_answer.get("failed"),
            "title": page.split("<title>", 1)[1].split("</title>", 1)[0],
            "headline_needs_you": "Needs you now" in page,
            "cards": {
                name: page.split(f'id="array-{name}"', 1)[0].rsplit("<", 1)[-1]
                + page.split(f'id="array-{name}"', 1)[1][:600]
                for name in ("md0", "md20")
            },
            "metrics": [line for line in metrics.splitlines() if "mdboost_md_failed{" in line],
        },
    )

    def outbox() -> list[Any]:
        conn = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT kind, message FROM notify_outbox ORDER BY id").fetchall()
        finally:
            conn.close()
        return [(kind, json.loads(message)) for kind, message in rows if kind == "broken"]

    wait_for(lambda: len(outbox()) >= 2, "two 'broken' notifications in the outbox", 30, 0.5)
    record("notifications", outbox())


def smoke() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    server = Server()
    server.start()
    try:
        smoke_reshape(server)
        smoke_failed_arrays()
    finally:
        server.stop()
        for log in sorted(OUT.glob("server-*.log")):
            say(f"--- {log.name} (tail)\n{log.read_text(errors='replace')[-3000:]}")


def scenario() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    server = Server()
    server.start()
    try:
        raid5_small()
        raid6_and_raid1_bitmap()
        reshape_with_tuning(server)
        sqlite_facts()
        api_samples = api("GET", "/api/arrays/md0/samples?points=50")
        record("md0_samples_points", len(api_samples["samples"]))
        smoke_failed_arrays()  # last: it unplugs a disk for the rest of the boot
    finally:
        server.stop()
        for log in sorted(OUT.glob("server-*.log")):
            say(f"--- {log.name} (tail)\n{log.read_text(errors='replace')[-3000:]}")


if __name__ == "__main__":
    main(smoke if sys.argv[1:] == ["smoke"] else scenario)
