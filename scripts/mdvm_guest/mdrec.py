#!/usr/bin/env python3
"""Record one real md run inside the mdvm guest (run by scripts/record_real5s.py).

    python3 mdrec.py SCENARIO.json OUTDIR

Sets up md0 on /dev/vda.. as the scenario says, starts the run (a grow, a resync, a recovery or
a check), samples /proc/mdstat and md0's sysfs once a second, plays the scenario's "person"
(knob changes at a time, at a progress fraction, or when a burst of competing I/O starts or
ends) and its bursts (dd of md0 or of a member), and writes OUTDIR/<name>.csv with the columns
of tests/fixtures/runs/README.md (real5s-*), plus <name>.meta.json (what happened when) and
<name>.mdstat.log (every distinct /proc/mdstat text with its time).

A knob change and the sampling share one lock, so the `event` mark lands on the first row that
read the new value. Rows before md0's progress line appears are dropped; the last row is the
first sample after it vanished (with sync_action back to idle), done = total.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

SYS = "/sys/block/md0/md"
PROC = "/proc/sys/dev/raid"
DISKS = [f"/dev/vd{c}" for c in "abcdefgh"]
COLUMNS = [
    "ts",
    "done",
    "total",
    "finish_min",
    "speed_kb_s",
    "action",
    "speed_min_kb_s",
    "speed_max_kb_s",
    "stripe_cache_size",
    "event",
    "knee",
    "kernel",  # the running kernel's release, as the live app reads it (batch g on)
    "chunk_kb",  # the array's chunk size, KiB (sysfs chunk_size), as the live app can read it
]
PROGRESS = re.compile(
    r"(resync|recovery|reshape|check|repair)\s*=\s*[\d.]+%\s*\((\d+)/(\d+)\)"
    r"\s*finish=([\d.]+)min\s*speed=(\d+)K/sec"
)
ACTIONS = {"recover": "recovery"}  # sync_action word -> /proc/mdstat word

T0 = time.time()
KERNEL = os.uname().release


def chunk_kb(text):
    """KiB of sysfs chunk_size (bytes); "" when unreadable."""
    return str(int(text) // 1024) if text.strip().isdigit() else ""


def log(msg):
    print(f"[mdrec +{time.time() - T0:7.1f}s] {msg}", flush=True)


def rd(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def wr(path, value):
    with open(path, "w") as f:
        f.write(f"{value}\n")


def sh(*cmd, check=True):
    res = subprocess.run(cmd, capture_output=True, text=True)
    log(f"$ {' '.join(cmd)} -> rc={res.returncode} {(res.stdout + res.stderr).strip()[:300]}")
    if check and res.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed")
    return res.returncode


def md0_block(mdstat):
    """The lines of md0's entry in /proc/mdstat."""
    out, inside = [], False
    for line in mdstat.splitlines():
        if re.match(r"^md\S* : ", line):
            inside = line.startswith("md0 ")
        elif not line.strip():
            inside = False
        if inside:
            out.append(line)
    return "\n".join(out)


class Recorder:
    def __init__(self, sc, outdir):
        self.sc = sc
        self.name = sc["name"]
        self.outdir = outdir
        self.lock = threading.Lock()
        self.pending = []  # knob-change kinds not yet put on a row
        self.rows = []
        self.started = threading.Event()
        self.finished = threading.Event()
        self.stop = threading.Event()
        self.last = None  # (ts, done, total) of the latest progress row
        self.first_ts = None
        self.meta = {
            "scenario": sc,
            "kernel": os.uname().release,
            "events": [],
            "bursts": [],
            "anomalies": [],
            "setup": [],
        }
        self.knee = sc.get("knee", "")
        self.action = ""
        self.last_mdstat = None
        self.mdlog = open(f"{outdir}/{self.name}.mdstat.log", "w")  # noqa: SIM115 - open for the whole run

    # -- knobs ------------------------------------------------------------------------------
    def knob(self, what, value, why):
        """A person's change of one knob; marks the next row."""
        path = {
            "global_min": f"{PROC}/speed_limit_min",
            "global_max": f"{PROC}/speed_limit_max",
            "array_min": f"{SYS}/sync_speed_min",
            "array_max": f"{SYS}/sync_speed_max",
            "stripe_cache": f"{SYS}/stripe_cache_size",
        }[what]
        kind = "stripe_cache" if what == "stripe_cache" else "limits"
        with self.lock:
            before = rd(path)
            try:
                wr(path, value)
                err = ""
            except OSError as e:
                err = f"{e.strerror}"
            after = rd(path)
            if not err:
                self.pending.append(kind)
        rec = {
            "ts": round(time.time(), 3),
            "knob": what,
            "value": value,
            "before": before,
            "after": after,
            "why": why,
            "error": err,
            "done_frac": round(self.last[1] / self.last[2], 4) if self.last else None,
        }
        self.meta["events"].append(rec)
        log(f"knob {what} {before!r} -> {after!r} ({why}){' ERROR ' + err if err else ''}")

    # -- sampling ---------------------------------------------------------------------------
    def sample(self):
        with self.lock:
            ts = time.time()
            mdstat = rd("/proc/mdstat")
            action = rd(f"{SYS}/sync_action")
            smin = rd(f"{SYS}/sync_speed_min").split(" ")[0]
            smax = rd(f"{SYS}/sync_speed_max").split(" ")[0]
            scs = rd(f"{SYS}/stripe_cache_size")
            chunk = rd(f"{SYS}/chunk_size")
            events = self.pending if self.started.is_set() else []
            if self.started.is_set():
                self.pending = []
        if mdstat != self.last_mdstat:
            self.mdlog.write(f"=== {ts:.3f} sync_action={action}\n{mdstat}\n")
            self.mdlog.flush()
            self.last_mdstat = mdstat
        event = "+".join(dict.fromkeys(events))
        m = PROGRESS.search(md0_block(mdstat))
        if m:
            word, done, total, finish, speed = m.groups()
            self.action = (
                ACTIONS.get(action, action) if action not in ("idle", "frozen", "") else word
            )
            if self.action != word:
                self.anomaly(ts, f"sync_action {action!r} but mdstat says {word!r}")
            self.rows.append(
                [
                    f"{ts:.3f}",
                    done,
                    total,
                    finish,
                    speed,
                    self.action,
                    smin,
                    smax,
                    scs,
                    event,
                    self.knee,
                    KERNEL,
                    chunk_kb(chunk),
                ]
            )
            self.last = (ts, int(done), int(total))
            if not self.started.is_set():
                self.first_ts = ts
                self.started.set()
                log(f"progress line appeared: {m.group(0)}")
        elif self.started.is_set():
            if action in ("idle", ""):
                total = self.rows[-1][2]
                self.rows.append(
                    [
                        f"{ts:.3f}",
                        total,
                        total,
                        "",
                        "",
                        self.action,
                        smin,
                        smax,
                        scs,
                        event,
                        self.knee,
                        KERNEL,
                        chunk_kb(chunk),
                    ]
                )
                self.finished.set()
                log("progress line gone: run finished")
            else:
                self.anomaly(ts, f"no progress line while sync_action={action!r}")
                with self.lock:
                    self.pending = events + self.pending

    def anomaly(self, ts, what):
        if len(self.meta["anomalies"]) < 200:
            self.meta["anomalies"].append({"ts": round(ts, 3), "what": what})
        log(f"ANOMALY {what}")

    def sampler(self):
        nxt = float(int(time.time()) + 1)
        while not self.stop.is_set() and not self.finished.is_set():
            time.sleep(max(0.0, nxt - time.time()))
            try:
                self.sample()
            except Exception as e:  # keep sampling whatever one tick did
                self.anomaly(time.time(), f"sample failed: {e!r}")
            nxt += 1.0
            if nxt < time.time():
                self.anomaly(time.time(), "late tick skipped")
                nxt = float(int(time.time()) + 1)

    # -- competing I/O ----------------------------------------------------------------------
    def bursts(self):
        cfg = self.sc.get("bursts")
        if not cfg:
            return
        rng = random.Random(cfg.get("seed", 1))
        size_mib = int(rd("/sys/block/vda/size") or 0) // 2048
        md_mib = int(rd("/sys/block/md0/size") or 0) // 2048
        first = True
        while not self.finished.is_set() and not self.stop.is_set():
            gap = (
                rng.uniform(*cfg.get("first", cfg["every"]))
                if first
                else rng.uniform(*cfg["every"])
            )
            first = False
            if self.finished.wait(gap):
                return
            if (
                "until_frac" in cfg
                and self.last
                and self.last[1] >= cfg["until_frac"] * self.last[2]
            ):
                log(f"bursts end: past {cfg['until_frac']:.0%} of the run")
                return
            length = rng.uniform(*cfg["length"])
            kind = rng.choice(cfg["kinds"])
            if kind == "read_md":
                cmd = [
                    "dd",
                    "if=/dev/md0",
                    "of=/dev/null",
                    "bs=1M",
                    "iflag=direct",
                    f"skip={rng.randrange(max(1, md_mib - 64))}",
                ]
            elif kind == "write_md":
                cmd = [
                    "dd",
                    "if=/dev/zero",
                    "of=/dev/md0",
                    "bs=1M",
                    "oflag=direct",
                    f"seek={rng.randrange(max(1, md_mib - 64))}",
                ]
            elif kind == "read_member":
                disk = DISKS[rng.randrange(self.sc["devices"])]
                cmd = [
                    "dd",
                    f"if={disk}",
                    "of=/dev/null",
                    "bs=1M",
                    "iflag=direct",
                    f"skip={rng.randrange(max(1, size_mib - 64))}",
                ]
            else:
                raise ValueError(kind)
            t_start = time.time()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            log(f"burst {kind} for {length:.0f}s: {' '.join(cmd)}")
            self.on_burst("burst_start")
            ended = False
            deadline = t_start + length
            while time.time() < deadline and p.poll() is None:
                if self.finished.wait(0.2):
                    ended = True
                    break
            p.send_signal(signal.SIGINT)  # dd prints what it moved, then exits
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err = p.stderr.read().strip().splitlines()
            self.meta["bursts"].append(
                {
                    "start": round(t_start, 3),
                    "end": round(time.time(), 3),
                    "kind": kind,
                    "cmd": " ".join(cmd),
                    "dd": err[-1] if err else "",
                }
            )
            self.on_burst("burst_end")
            if ended:
                return

    def on_burst(self, trigger):
        for item in self.sc.get("person", []):
            if (
                item.get("on") == trigger
                and not item.get("_done")
                and self.first_ts is not None
                and time.time() - self.first_ts >= item.get("after_s", 0)
            ):
                item["_done"] = True
                self.apply(item, trigger)

    def apply(self, item, why):
        for what, value in item["set"].items():
            self.knob(what, value, why)

    # -- the run ----------------------------------------------------------------------------
    def setup(self):
        sc = self.sc
        lim = sc.get("global", {})
        wr(f"{PROC}/speed_limit_min", lim.get("min", 10000))
        wr(f"{PROC}/speed_limit_max", lim.get("max", 200000))
        n = sc["devices"]
        level = sc["level"]
        create = [
            "mdadm",
            "--create",
            "/dev/md0",
            "--run",
            f"--level={level}",
            f"--chunk={sc.get('chunk', 64)}",
            f"--raid-devices={n}",
        ]
        if sc["start"] == "resync":
            if level == 5:
                create.append("--force")  # a real resync, not md's degraded + spare recovery
        else:
            create.append("--assume-clean")
        self.run_start = time.time()
        threading.Thread(target=self.sampler, daemon=True).start()
        if sc["start"] == "resync":
            sh(*create, *DISKS[:n])  # the resync starts at once: limits are the global ones
            self.array_knobs()
            return
        sh(*create, *DISKS[:n])
        self.array_knobs()
        time.sleep(2)
        if sc["start"] == "grow":
            new = sc["grow_to"]
            for d in DISKS[n:new]:
                sh("mdadm", "/dev/md0", "--add", d)
            if sh("mdadm", "--grow", "/dev/md0", f"--raid-devices={new}", check=False) != 0:
                sh(
                    "mdadm",
                    "--grow",
                    "/dev/md0",
                    f"--raid-devices={new}",
                    "--backup-file=/tmp/md0-grow.backup",
                )
        elif sc["start"] == "recovery":
            d = DISKS[sc.get("fail", n - 1)]
            sh("mdadm", "/dev/md0", "--fail", d)
            time.sleep(1)
            sh("mdadm", "/dev/md0", "--remove", d)
            time.sleep(1)
            if sh("mdadm", "/dev/md0", "--re-add", d, check=False) != 0:
                sh("mdadm", "--zero-superblock", d)
                sh("mdadm", "/dev/md0", "--add", d)
        elif sc["start"] == "check":
            wr(f"{SYS}/sync_action", "check")
            log("echo check > sync_action")
        else:
            raise ValueError(sc["start"])

    def array_knobs(self):
        """Initial per-array knobs (before the run, or right after a resync's create)."""
        sc = self.sc
        if "stripe_cache" in sc and os.path.exists(f"{SYS}/stripe_cache_size"):
            wr(f"{SYS}/stripe_cache_size", sc["stripe_cache"])
        for k, v in sc.get("array", {}).items():
            wr(f"{SYS}/sync_speed_{k}", v)
        self.meta["setup"].append(
            {
                "ts": round(time.time(), 3),
                "stripe_cache": rd(f"{SYS}/stripe_cache_size"),
                "sync_speed_min": rd(f"{SYS}/sync_speed_min"),
                "sync_speed_max": rd(f"{SYS}/sync_speed_max"),
            }
        )

    def person(self):
        """Time- and progress-triggered knob changes until the run ends."""
        items = [i for i in self.sc.get("person", []) if "at_s" in i or "at_frac" in i]
        while not self.finished.wait(0.2):
            for item in items:
                if item.get("_done") or self.last is None:
                    continue
                _, done, total = self.last
                if ("at_s" in item and time.time() - self.first_ts >= item["at_s"]) or (
                    "at_frac" in item and done >= item["at_frac"] * total
                ):
                    item["_done"] = True
                    self.apply(
                        item,
                        f"at_s={item['at_s']}" if "at_s" in item else f"at_frac={item['at_frac']}",
                    )

    def run(self):
        log(f"scenario {json.dumps(self.sc)}")
        self.setup()
        if not self.started.wait(120):
            self.anomaly(time.time(), "no progress line within 120 s")
            self.stop.set()
            return self.write(ok=False)
        burst = threading.Thread(target=self.bursts, daemon=True)
        burst.start()
        deadline = self.first_ts + self.sc.get("max_s", 3600)
        person = threading.Thread(target=self.person, daemon=True)
        person.start()
        while not self.finished.wait(5):
            if time.time() > deadline:
                self.anomaly(time.time(), "max_s reached: run cut short")
                self.stop.set()
                break
        burst.join(10)
        person.join(2)
        return self.write(ok=self.finished.is_set())

    def write(self, ok):
        self.mdlog.close()
        with open(f"{self.outdir}/{self.name}.csv", "w") as f:
            f.write(",".join(COLUMNS) + "\n")
            for r in self.rows:
                f.write(",".join(str(x) for x in r) + "\n")
        self.meta["ok"] = ok
        self.meta["rows"] = len(self.rows)
        self.meta["first_ts"] = self.first_ts
        self.meta["final"] = {
            k: rd(f"{SYS}/{k}")
            for k in (
                "raid_disks",
                "stripe_cache_size",
                "sync_speed_min",
                "sync_speed_max",
                "mismatch_cnt",
            )
        }
        self.meta["final"]["mdadm_detail"] = subprocess.run(
            ["mdadm", "--detail", "/dev/md0"], capture_output=True, text=True
        ).stdout
        for item in self.sc.get("person", []):
            item.pop("_done", None)
        with open(f"{self.outdir}/{self.name}.meta.json", "w") as f:
            json.dump(self.meta, f, indent=1)
        log(f"wrote {len(self.rows)} rows, ok={ok}")
        return 0 if ok else 1


def main():
    with open(sys.argv[1]) as f:
        sc = json.load(f)
    return Recorder(sc, sys.argv[2]).run()


if __name__ == "__main__":
    sys.exit(main())
