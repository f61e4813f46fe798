"""Guest scenario: a preset that makes a real grow slower is put back by mdboost itself.

Runs as root. A RAID5 3->4 grow on HDD-like throttled disks with DSM-like defaults; mdboost
serves with 1 s ticks and a 45 s effect window (MDBOOST_EFFECT_MINUTES=0.75). After the pace
before it is known, a user preset holds the array to a ceiling far below that pace (the harmful
value that can be forced: mdboost never writes a stripe cache below the one md holds, so a too
small cache cannot be); mdboost must find the grow slower than before, put the original values
back by itself, say so in GET /api/tuning and queue a notification, and the grow must go on at
its old pace. The kernel's own progress counter measures the paces here, not mdboost. Results go to $OUT/facts.json for
tests/realkernel/test_slower_on_real_kernel.py.
"""

import sqlite3
import time

from api_scenarios import DATA, DB, Server, api, api_action, knobs, reshape_speed_kib_s
from bench_reshape import dsm_array_with_a_new_disk
from mdguest import main, md_path, read, record, say, sh, wait_for

# KiB/s: a ceiling under a quarter of the grow's pace on these disks (4 MB/s a member on 6.1),
# with a floor below it (md throttles only above the min: md.c md_do_sync)
PRESET = (
    'summary = "a ceiling too low for the grow"\n'
    '[knobs.sync_speed_min]\nvalue = 500\nreason = "below the ceiling"\n'
    '[knobs.sync_speed_max]\nvalue = 1000\nreason = "makes the grow slower"\n'
)


def outbox_kinds() -> list[str]:
    conn = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT kind FROM notify_outbox ORDER BY id")]
    finally:
        conn.close()


def scenario() -> None:
    DATA.mkdir(exist_ok=True)
    (DATA / "too-low.toml").write_text(PRESET)
    # 45 s windows: under the ceiling md's progress counter moves in jumps of several MB, and a
    # 15 s window with one jump in it judged a 0.04x ceiling "not slower" (2874 -> 1610 KiB/s,
    # noise 1652) on a quiet host.
    server = Server(effect_minutes="0.75")
    server.start()
    try:
        dsm_array_with_a_new_disk()
        sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4")
        wait_for(lambda: api_action("md0") == "reshape", "the sampler to see the reshape", 60, 0.2)
        # md's first seconds of a reshape run on QEMU's throttle burst, then fall to the disks'
        # pace: the before-window must see the steady pace, or its spread hides any loss.
        record("pace_first_20_s_kib_s", round(reshape_speed_kib_s(20.0)))
        record("pace_next_20_s_kib_s", round(reshape_speed_kib_s(20.0)))
        originals = knobs()
        record("originals", originals)
        record("pace_before_kib_s", round(reshape_speed_kib_s(20.0)))  # mdboost's before-window
        applied = api("POST", "/api/presets/too-low/apply")
        record("applied", applied["applied"])
        record("active_after_apply", api("GET", "/api/tuning")["active"])
        pressed = time.monotonic()
        record("pace_with_preset_kib_s", round(reshape_speed_kib_s(20.0)))

        def put_back() -> bool:
            return api("GET", "/api/tuning")["active"] is False

        wait_for(put_back, "mdboost to put the preset back", 180, 0.5)
        record("put_back_after_s", round(time.monotonic() - pressed, 1))
        tuning = api("GET", "/api/tuning")
        record("slower", tuning["slower"])
        record("after_revert", knobs())
        record("reshaping_after_revert", read(md_path("md0", "sync_action")))
        record("pace_after_revert_kib_s", round(reshape_speed_kib_s(15.0)))
        wait_for(lambda: "slower" in outbox_kinds(), "the notification in the outbox", 30, 0.5)
        record("outbox", outbox_kinds())
        say(f"put back after {time.monotonic() - pressed:.0f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main(scenario)
