"""tuning_access(): whether tuning may write here, found out on real files without changing them."""

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.kernel.access import report_tuning_access, tuning_access
from app.kernel.host import Host
from app.main import create_app

# CapEff as /proc/self/status prints it: a full root set, and one without CAP_SYS_ADMIN (bit 21).
CAP_FULL = "000001ffffffffff"
CAP_NO_SYS_ADMIN = f"{0x1FFFFFFFFFF & ~(1 << 21):016x}"


def make_tree(root: Path, *, raid_sysctl: bool = True, cap_eff: str | None = None) -> Host:
    files = {
        "proc/mdstat": "Personalities : [raid5]\nunused devices: <none>\n",
        "sys/block/md2/md/stripe_cache_size": "256\n",
        "sys/block/md2/md/sync_speed_min": "1000 (system)\n",
        "sys/block/md2/md/sync_speed_max": "200000 (system)\n",
        "sys/block/sda/size": "1000\n",
    }
    if raid_sysctl:
        files["proc/sys/dev/raid/speed_limit_min"] = "1000\n"
        files["proc/sys/dev/raid/speed_limit_max"] = "200000\n"
    if cap_eff is not None:
        files["proc/self/status"] = f"Name:\tmdboost\nCapEff:\t{cap_eff}\n"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return Host(root / "proc", root / "sys")


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_writable_tree_allows_tuning_and_changes_nothing(tmp_path: Path) -> None:
    host = make_tree(tmp_path, cap_eff=CAP_FULL)
    before = snapshot(tmp_path)
    access = tuning_access(host)
    assert access.writable and access.raid_sysctl_writable and access.cap_sys_admin
    assert access.problems == ()
    assert snapshot(tmp_path) == before


def test_without_cap_sys_admin_tuning_is_off(tmp_path: Path) -> None:
    access = tuning_access(make_tree(tmp_path, cap_eff=CAP_NO_SYS_ADMIN))
    assert not access.writable
    assert access.cap_sys_admin is False
    assert "no CAP_SYS_ADMIN" in access.summary()
    assert "`privileged: true`" in access.summary()


def test_without_raid_sysctl_per_array_limits_replace_the_global_ones(tmp_path: Path) -> None:
    access = tuning_access(make_tree(tmp_path, raid_sysctl=False))
    assert access.writable and not access.raid_sysctl_writable
    assert access.cap_sys_admin is None  # a test tree has no proc/self/status
    assert "per-array sync_speed_min/max replace them" in access.summary()


def test_missing_sysfs_means_no_tuning(tmp_path: Path) -> None:
    access = tuning_access(Host(tmp_path / "proc", tmp_path / "sys"))
    assert not access.writable
    assert f"no {tmp_path / 'sys' / 'block'}" in access.problems


def test_report_logs_one_line_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="app.kernel.access"):
        report_tuning_access(make_tree(tmp_path, cap_eff=CAP_NO_SYS_ADMIN))
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.WARNING, None)]
    assert "\n" not in caplog.records[0].getMessage()
    assert "monitoring works" in caplog.records[0].getMessage()


@pytest.mark.parametrize(("cap_eff", "writable"), [(CAP_FULL, True), (CAP_NO_SYS_ADMIN, False)])
def test_healthz_reports_tuning_writable(tmp_path: Path, cap_eff: str, writable: bool) -> None:
    host = make_tree(tmp_path / "kernel", cap_eff=cap_eff)
    settings = Settings(proc_root=host.proc_root, sys_root=host.sys_root, db=tmp_path / "db.sqlite")
    with TestClient(create_app(settings)) as client:
        body = client.get("/healthz").json()
    assert body["tuning_writable"] is writable
