"""POST /api/plan and the page's "Plan a change" on a real kernel tree and a real SQLite history:
the join picks this box's own paces and boost's measured effect, bad input gets a 422, and
nothing changes."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.live.snapshot import Snapshot
from app.main import create_app
from app.shapes.change_plan import PlanBody
from app.store import db
from app.web import change_planning
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree
from tests.planner.test_change import SHR_1_1_2_2, pools_of
from tests.server import wait_for

DAY = 86400.0
MD2_MEMBER = 2915894784 // 3  # KiB in each of md2's four partitions
MD3_MEMBER = 976261120  # ... and of md3's two
CHECK_S = 7200.0  # the check of md2 took two hours: 135 MB/s a disk
GROW_BEFORE_S, GROW_AFTER_S = 40_000.0, 3_000.0  # md2's last grow, before and after its knee


def seed_history(path: Path, now: float) -> None:
    """A check of md2 three days ago; md2's grow from 3 to 4 disks a week ago, boosted x1.8."""
    conn = db.connect(path)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    check_start = now - 3 * DAY
    conn.execute(
        "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
        "VALUES (1, 'md2', 'check', ?, ?, 'completed', ?)",
        (check_start, check_start + CHECK_S, MD2_MEMBER),
    )
    start = now - 7 * DAY
    knee_at, end = start + GROW_BEFORE_S, start + GROW_BEFORE_S + GROW_AFTER_S
    conn.execute(
        "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
        "VALUES (2, 'md2', 'reshape', ?, ?, 'completed', ?)",
        (start, end, MD2_MEMBER),
    )
    for ts, done in ((start, 0), (knee_at, MD2_MEMBER * 3 // 4), (end, MD2_MEMBER)):
        conn.execute(
            "INSERT INTO samples (ts, array, run_id, action, done_blocks, total_blocks) "
            "VALUES (?, 'md2', 2, 'reshape', ?, ?)",
            (ts, done, MD2_MEMBER),
        )
    # md3's recovery two days ago, after the check: 10 % slower than the check's pace says.
    rebuilt = now - 2 * DAY
    conn.execute(
        "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
        "VALUES (3, 'md3', 'recovery', ?, ?, 'completed', ?)",
        (rebuilt, rebuilt + MD3_MEMBER / (MD2_MEMBER / CHECK_S) * 1.1, MD3_MEMBER),
    )
    conn.execute(
        "INSERT INTO tuning_sessions (id, started, preset) VALUES (1, ?, 'boost')", (start,)
    )
    conn.execute(
        "INSERT INTO tuning_ops (id, session_id, kind, preset, started, state) "
        "VALUES (1, 1, 'apply', 'boost', ?, 'done')",
        (start,),
    )
    conn.execute(
        "INSERT INTO tuning_effects (op_id, array, run_id, preset, applied_at, before_kb_s, "
        "after_kb_s, ratio, measured_at) VALUES (1, 'md2', 2, 'boost', ?, 10, 18, 1.8, ?)",
        (start + 600, start + 1200),
    )
    conn.close()


def shr_tree(tree: KernelTree, mdstat: str = SHR_1_1_2_2) -> None:
    tree.mdstat(mdstat)
    for name in ("md0", "md1", "md2", "md3"):
        tree.md(name)


@pytest.fixture
def planner(tree: KernelTree, tmp_path: Path) -> Iterator[TestClient]:
    shr_tree(tree)
    seed_history(tmp_path / "db.sqlite", time.time())
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite", demo=True, demo_open=True
    )
    with TestClient(create_app(settings)) as client:
        snapshot_builder = client.app.state.snapshot_builder  # type: ignore[attr-defined]
        wait_for(lambda: snapshot_builder.snapshot.ts is not None, 10, "a sampler tick")
        yield client


def test_a_plan_rests_on_this_boxs_history(planner: TestClient):
    response = planner.post("/api/plan", json={"change": "add", "disk_bytes": 2 * 10**12})
    assert response.status_code == 200, response.text
    body = PlanBody.model_validate(response.json())
    assert body.pool == "SHR-1" and body.possible
    assert [(s.order, s.array, s.action, s.level_after, s.disks_after) for s in body.steps] == [
        (1, "md2", "grow", "raid5", 5),
        (2, "md3", "grow", "raid5", 3),
    ]
    md2 = body.steps[0]
    assert md2.source == "measured"
    assert "from the grow of md2" in md2.why
    # md2's own last grow: 3/4 of a member in 40000 s, the rest in 3000 s.
    assert md2.duration.seconds == pytest.approx(GROW_BEFORE_S + GROW_AFTER_S, rel=0.01)
    assert md2.boost_why == "measured on md2"
    assert md2.boost_duration.seconds == pytest.approx(md2.duration.seconds / 1.8, rel=0.01)
    assert body.total is not None and body.boost_total is not None
    assert body.capacity_after is not None
    assert body.capacity_after.usable_bytes > body.capacity_before.usable_bytes
    assert body.summary.startswith("Adding a 2.0 TB disk: about")
    assert "with boost;" in body.summary and "→" in body.summary


def test_a_rebuild_goes_at_the_newest_syncs_pace(planner: TestClient):
    """The newest sync is md3's recovery, 10 % slower a disk than the check before it."""
    response = planner.post(
        "/api/plan", json={"change": "replace", "disk_bytes": 2 * 10**12, "member": "sdc6"}
    )
    body = PlanBody.model_validate(response.json())
    assert [(s.array, s.action) for s in body.steps] == [("md2", "rebuild"), ("md3", "rebuild")]
    md2 = body.steps[0]
    assert md2.source == "measured" and "from the recovery of md3 on" in md2.why
    assert md2.duration.seconds == pytest.approx(CHECK_S * 1.1, rel=0.01)
    assert body.member == "sdc"


def test_a_disk_too_small_is_refused_with_its_reason(planner: TestClient):
    body = planner.post(
        "/api/plan", json={"change": "replace", "disk_bytes": 10**12, "member": "sdc"}
    ).json()
    assert body["possible"] is False and body["steps"] == [] and body["capacity_after"] is None
    assert "md cannot rebuild onto a smaller member" in body["refusals"][0]
    assert body["summary"].startswith("Replacing sdc with a 1.0 TB disk: not possible")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"change": "add", "disk_bytes": -1}, "greater than 0"),
        ({"change": "add", "disk_bytes": 0}, "greater than 0"),
        ({"change": "add", "disk_bytes": 10**16}, "less than or equal"),
        ({"change": "add", "disk_bytes": "8TB"}, "valid integer"),
        ({"change": "replace", "disk_bytes": 10**12}, "names the member"),
        ({"change": "add", "disk_bytes": 10**12, "member": "sdb"}, "names no member"),
        ({"change": "replace", "disk_bytes": 10**12, "member": "sdz"}, "not a disk of the"),
        ({"change": "replace", "disk_bytes": 10**12, "member": "../etc"}, "pattern"),
        ({"change": "shrink", "disk_bytes": 10**12}, "'add' or 'replace'"),
        ({"change": "add", "disk_bytes": 10**12, "pool": "x"}, "Extra inputs"),
    ],
)
def test_bad_input_gets_a_clear_422_and_changes_nothing(
    planner: TestClient, tree: KernelTree, tmp_path: Path, body, says
):
    before = tree.snapshot()
    response = planner.post("/api/plan", json=body)
    assert response.status_code == 422
    assert says in response.text
    assert tree.snapshot() == before
    conn = db.connect(tmp_path / "db.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM tuning_ops").fetchone()[0] == 1
    conn.close()


def disks_tree(tree: KernelTree, files: dict[str, dict[str, str]]) -> None:
    """The SHR box of shr_tree() with each disk's partitions and these files under
    /sys/block/<disk>/."""
    shr_tree(tree)
    for disk, attrs in files.items():
        for part in (1, 2, 5, 6):
            (tree.sys / "block" / disk / f"{disk}{part}").mkdir(parents=True, exist_ok=True)
        for name, value in attrs.items():
            tree.write(f"sys/block/{disk}/{name}", f"{value}\n")


def plan_on_fresh_box(
    tree: KernelTree, tmp_path: Path, change: dict[str, object]
) -> tuple[PlanBody, Snapshot]:
    """POST /api/plan on an app with no history, once its sampler has ticked."""
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite")
    with TestClient(create_app(settings)) as client:
        snapshot_builder = client.app.state.snapshot_builder  # type: ignore[attr-defined]
        wait_for(lambda: snapshot_builder.snapshot.ts is not None, 10, "a sampler tick")
        response = client.post("/api/plan", json=change)
        return PlanBody.model_validate(response.json()), snapshot_builder.snapshot


def test_a_disk_s_free_tail_comes_from_sysfs_through_the_sampler(tree: KernelTree, tmp_path: Path):
    """sda was swapped for a 3 TB disk already: mdstat shows only its 1 TB partitions. The
    sampler reads its whole size from /sys/block/sda/size, so replacing sdd with a 3 TB disk
    also creates a mirror of the two 3 TB disks' top TB (hddfaqs.com's example)."""
    three_tb = 5860533168  # 512-byte sectors
    sizes = {"sda": three_tb, "sdb": 1953525168, "sdc": 3907029168, "sdd": 3907029168}
    disks_tree(tree, {d: {"size": str(n)} for d, n in sizes.items()})
    change = {"change": "replace", "disk_bytes": three_tb * 512, "member": "sdd"}
    body, snapshot = plan_on_fresh_box(tree, tmp_path, change)
    assert snapshot.disk_kib["sda"] == three_tb // 2
    assert [(s.array, s.action, s.level_after, s.disks_after) for s in body.steps] == [
        ("md2", "rebuild", "raid5", 4),
        ("md3", "rebuild", "raid1", 2),
        ("md4", "create", "raid1", 2),
    ]
    assert body.capacity_after is not None
    gained = body.capacity_after.usable_bytes - body.capacity_before.usable_bytes
    assert 0.95e12 < gained < 1.05e12


@pytest.mark.parametrize(("rotational", "says"), [("1", "seek-bound"), ("0", "streaming pace")])
def test_spinning_disks_grow_at_their_seeks_ssds_at_their_streaming(
    tree: KernelTree, tmp_path: Path, rotational: str, says: str
):
    """The sampler reads queue/rotational with the sizes; a box without a past grow plans the
    part before the knee from it."""
    disks_tree(tree, {d: {"queue/rotational": rotational} for d in ("sda", "sdb", "sdc", "sdd")})
    body, _ = plan_on_fresh_box(tree, tmp_path, {"change": "add", "disk_bytes": 2 * 10**12})
    assert body.steps[0].action == "grow"
    assert says in body.steps[0].why


def test_the_kernel_the_sampler_reads_sets_the_requests_a_grow_makes(
    tree: KernelTree, tmp_path: Path
):
    """A grow's seek bound rests on what each request carries, which is the kernel's: the
    sampler reads the release once, and the plan names it (or says the kernel is unmeasured)."""
    disks_tree(tree, {d: {"queue/rotational": "1"} for d in ("sda", "sdb", "sdc", "sdd")})
    grow = {"change": "add", "disk_bytes": 2 * 10**12}
    seconds = {}
    for release, says in [
        ("5.10.0-32-amd64", "Linux 5.10.0-32"),
        ("6.1.0-56-amd64", "Linux 6.1.0-56"),
        ("4.4.302+", "Linux 4.4 not measured"),
    ]:
        tree.write("proc/sys/kernel/osrelease", f"{release}\n")
        body, snapshot = plan_on_fresh_box(tree, tmp_path / release, grow)
        assert snapshot.kernel_release == release
        assert says in body.steps[0].why, body.steps[0].why
        seconds[release] = body.steps[0].duration.seconds
    # 5.10 moves several times the bytes a request that 6.1 does: the same grow plans shorter.
    assert seconds["5.10.0-32-amd64"] < seconds["6.1.0-56-amd64"] / 2


def test_a_replace_on_a_degraded_pool_gets_a_422(tree: KernelTree, tmp_path: Path):
    shr_tree(tree, SHR_1_1_2_2.replace("[4/4] [UUUU]\n\nmd1", "[4/3] [UUU_]\n\nmd1", 1))
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite")
    with TestClient(create_app(settings)) as client:
        snapshot_builder = client.app.state.snapshot_builder  # type: ignore[attr-defined]
        wait_for(lambda: snapshot_builder.snapshot.ts is not None, 10, "a sampler tick")
        response = client.post(
            "/api/plan", json={"change": "replace", "disk_bytes": 4 * 10**12, "member": "sda"}
        )
        assert response.status_code == 422
        assert "md2 is degraded" in response.json()["detail"]


def test_the_page_section_plans_from_a_form(planner: TestClient):
    page = planner.get("/")
    assert 'id="plan"' in page.text and "Plan a change" in page.text
    assert 'href="#plan"' in page.text  # from the headline
    section = planner.get("/ui/plan?change=add&disk_tb=2&member=")
    assert section.status_code == 200
    assert "Adding a 2.0 TB disk: about" in section.text
    assert "md2: grow raid5 on 4 to raid5 on 5 disks" in section.text
    refused = planner.get("/ui/plan?change=replace&disk_tb=2&member=sdq")
    assert "not a disk of the SHR-1 pool" in refused.text
    assert planner.get("/ui/plan?change=add&disk_tb=-3").status_code == 422


def test_a_runs_page_shows_the_plan_beside_what_happened(planner: TestClient):
    """md3's recovery, planned from the check before it, took 10 % longer: the plan was 9 % short.
    md2's grow came before any check: its plan rested on assumptions, and says so."""
    page = planner.get("/runs/3").text
    assert "Planned before it began (from this box's history then): about 2 h 00 min" in page
    assert "measured" in page and "it took 1.1x as long as planned" in page
    grow = planner.get("/runs/2").text
    assert "Planned before it began" in grow and "assumed" in grow
    assert "Planned before it began" not in planner.get("/runs/1").text  # a check is not planned


def test_an_interrupted_check_still_gives_its_pace(conn):
    """A short check that ends between two ticks can be judged interrupted (app/live/run_tracking.py):
    its samples still tell the pace a disk, and only they do."""
    (pool,) = pools_of(SHR_1_1_2_2)
    now = time.time()
    conn.execute(
        "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
        "VALUES (1, 'md2', 'check', ?, ?, 'interrupted', ?)",
        (now - 100, now - 10, MD2_MEMBER),
    )
    for ts, done in ((now - 99, 100_000), (now - 49, 5_100_000)):
        conn.execute(
            "INSERT INTO samples (ts, array, run_id, action, done_blocks, total_blocks, "
            "speed_max_kb_s) VALUES (?, 'md2', 1, 'check', ?, ?, 200000)",
            (ts, done, MD2_MEMBER),
        )
    sync = change_planning.pool_history(Snapshot(), conn, pool, now).sync
    assert sync is not None and sync.kib_s == pytest.approx(100_000)
    assert sync.what == "the check of md2" and not sync.held_by_max
