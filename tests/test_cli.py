import json
import os
import subprocess
import sys

import pytest

from tests import PROJECT_ROOT
from tests.server import free_port

SEED_MDSTAT = """Personalities : [linear] [raid0] [raid1] [raid10] [raid6] [raid5] [raid4]
md3 : active raid5 sdd6[2] sda6[0] sdb6[1]
      1953494784 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/3] [UUU]
      [=====>...............]  reshape = 25.1% (491263360/1953494784) finish=5198.4min speed=4687K/sec

md0 : active raid1 sdd1[3] sda1[0] sdb1[1] sdc1[2]
      2490176 blocks [4/4] [UUUU]

unused devices: <none>
"""


def mdboost(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env=env,
        timeout=60,
    )


def test_parse_prints_the_documented_json(tmp_path):
    result = mdboost("parse", "-", stdin=SEED_MDSTAT)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["personalities"] == ["linear", "raid0", "raid1", "raid10", "raid6", "raid5", "raid4"]
    md3, md0 = out["arrays"]
    assert md3["sync"] == {
        "action": "reshape",
        "percent": 25.1,
        "done_blocks": 491263360,
        "total_blocks": 1953494784,
        "finish_min": 5198.4,
        "speed_kb_s": 4687,
    }
    assert (md0["super"], md0["status"], md0["devices"][0]) == (
        None,
        "UUUU",
        {"name": "sdd1", "index": 3, "flags": ""},
    )
    file = tmp_path / "mdstat"
    file.write_text(SEED_MDSTAT)
    assert json.loads(mdboost("parse", str(file)).stdout) == out


def test_parse_errors_are_clean(tmp_path):
    missing = mdboost("parse", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    binary = mdboost("parse", "-", stdin="\x00\x00")
    assert binary.returncode == 1 and "binary" in binary.stderr
    assert "Traceback" not in missing.stderr + binary.stderr


def test_parse_into_a_closed_pipe_is_not_an_error(tmp_path):
    big = tmp_path / "mdstat"
    big.write_text(SEED_MDSTAT.replace("unused devices: <none>\n", "") * 2000)
    result = subprocess.run(
        f"{sys.executable} -m app parse {big} | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=60,
    )
    assert result.stdout == "{\n"
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_a_missing_data_directory_stops_start_up_and_is_named(tmp_path):
    missing = tmp_path / "no-templates"
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", "1"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={
            **os.environ,
            "MDBOOST_TEMPLATES_DIR": str(missing),
            "MDBOOST_DB": str(tmp_path / "db"),
        },
        timeout=60,
    )
    assert done.returncode == 2
    assert f"the templates_dir directory {missing} does not exist" in done.stderr
    assert "no such table" not in done.stderr


def test_parse_keeps_a_broken_array_even_when_it_is_the_only_one():
    """An mdstat of nothing but a failed array is parsed, never refused as "not an mdstat"."""
    text = (
        "Personalities : [raid6] [raid5] [raid4] \n"
        "md1 : broken raid5 sdb1[1](F) sdc1[2](F) sda1[0]\n"
        "      3906764800 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/1] [U__]\n"
        "      \n"
        "unused devices: <none>\n"
    )
    result = mdboost("parse", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (md1,) = json.loads(result.stdout)["arrays"]
    assert (md1["name"], md1["state"], md1["status"]) == ("md1", "broken", "U__")
    assert [d["flags"] for d in md1["devices"]] == ["F", "F", ""]


def test_a_short_mdboost_password_stops_start_up_saying_the_minimum(box, tmp_path):
    """MDBOOST_PASSWORD=a stops start-up, saying the minimum, as /setup asks for 8
    characters. The real command on a kernel tree: it must stop before it listens."""
    port = free_port()
    for command in ("serve", "demo"):
        try:
            done = subprocess.run(
                [sys.executable, "-m", "app", command, "--host", "127.0.0.1", "--port", str(port)],
                capture_output=True,
                text=True,
                cwd=PROJECT_ROOT,
                env={
                    **os.environ,
                    "MDBOOST_PASSWORD": "short12",
                    "MDBOOST_PROC_ROOT": str(box.proc),
                    "MDBOOST_SYS_ROOT": str(box.sys),
                    "MDBOOST_DB": str(tmp_path / command / "mdboost.db"),
                },
                timeout=30,
            )
        except subprocess.TimeoutExpired as still_running:
            raise AssertionError(f"`mdboost {command}` started with a 7-character password") from (
                still_running
            )
        assert done.returncode == 2, done.stderr
        assert "MDBOOST_PASSWORD: at least 8 characters" in done.stderr
        assert "short12" not in done.stderr + done.stdout  # the value itself is never shown
        assert not (tmp_path / command).exists()  # stopped before touching anything


def test_bad_settings_stop_start_up_each_on_its_own_line(box, tmp_path):
    """`mdboost serve` names every bad setting with what is wrong, one line each, and exits 2
    before listening."""
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={
            **os.environ,
            "MDBOOST_PROC_ROOT": str(box.proc),
            "MDBOOST_SYS_ROOT": str(box.sys),
            "MDBOOST_DB": str(tmp_path / "mdboost.db"),
            "MDBOOST_KEEP_DAYS": "-1",
            "MDBOOST_REVERT_ON_EXIT": "perhaps",
            "MDBOOST_MAX_BODY_BYTES": "64k",
        },
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "mdboost: cannot start: MDBOOST_KEEP_DAYS: Input should be greater than or equal to 0",
        "mdboost: cannot start: MDBOOST_REVERT_ON_EXIT: Input should be a valid boolean, "
        "unable to interpret input",
        "mdboost: cannot start: MDBOOST_MAX_BODY_BYTES: Input should be a valid integer, "
        "unable to parse string as an integer",
    ]
    assert not (tmp_path / "mdboost.db").exists()


@pytest.mark.parametrize(
    ("name", "weak"), [("MDBOOST_API_TOKEN", "1234"), ("MDBOOST_READ_TOKEN", "x" * 31)]
)
def test_a_short_token_refuses_start_up_in_one_line(box, tmp_path, name, weak):
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={
            **os.environ,
            name: weak,
            "MDBOOST_PROC_ROOT": str(box.proc),
            "MDBOOST_SYS_ROOT": str(box.sys),
            "MDBOOST_DB": str(tmp_path / "mdboost.db"),
        },
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"mdboost: cannot start: {name}: at least 32 characters (`openssl rand -hex 24` makes"
        " one): a short token can be guessed"
    ]
    assert weak not in done.stderr.replace(name, "") + done.stdout
    assert not (tmp_path / "mdboost.db").exists()
