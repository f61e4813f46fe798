"""app/md/mdstat.py's renderer: the kernel's exact layout, byte for byte, and what it renders
parses back to the same values."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.kernel import mdstat_parse
from app.md import mdstat
from app.md.mdstat import Array, Bitmap, Device, MdStat, Sync
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "mdstat"


@pytest.mark.parametrize(
    "capture",
    [
        "24-node-exporter-500-raid0-nvme-gce",
        "26-synology-ds920-sata-names-raidf1",
        "30-netdata-840-raid5-blank-space-lines",
        "31-check-raid-225-auto-read-only",
    ],
)
def test_render_reproduces_untouched_kernel_output_byte_for_byte(capture: str) -> None:
    # These four were pasted without trimming the kernel's lines of six spaces.
    text = (FIXTURES / f"{capture}.txt").read_bytes().decode("utf-8")
    assert mdstat.render(mdstat_parse.parse(text)) == text


KERNEL_FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "kernel"


def test_rendered_kernel_fixture_is_md_c_layout_byte_for_byte() -> None:
    """tests/fixtures/kernel/raid5-broken: raid5-faulty-member (captured) once vdb fails too."""
    text = (KERNEL_FIXTURES / "raid5-broken" / "proc" / "mdstat").read_text()
    captured = mdstat_parse.parse(
        (KERNEL_FIXTURES / "raid5-faulty-member" / "proc" / "mdstat").read_text()
    )
    md0 = captured.arrays[0]
    failed = replace(
        md0,
        state="broken",
        devices=tuple(replace(d, flags="F") if d.name == "vdb" else d for d in md0.devices),
        active_disks=1,
        status="U__",
    )
    assert mdstat.render(replace(captured, arrays=(failed,))) == text
    assert mdstat_parse.parse(text).arrays == (failed,)


# --- property: anything the kernel could print for a state parses back to that state ----------

LEVELS = ["linear", "raid0", "raid1", "raid4", "raid5", "raid6", "raid10", "multipath", "raidF1"]

device_names = st.one_of(
    st.from_regex(r"(sd[a-z]{1,2}|hd[a-h]|xvd[a-z]|loop)[0-9]{0,2}", fullmatch=True),
    st.from_regex(r"nvme[0-9]n[0-9](p[0-9])?|sata[1-9]p[1-9]|dm-[0-9]{1,2}", fullmatch=True),
    st.from_regex(r"cciss/c[0-9]d[0-9]p[0-9]|md[0-9]{1,3}|md_d[0-9]", fullmatch=True),
)
devices = st.builds(
    Device,
    name=device_names,
    index=st.integers(0, 255),
    flags=st.lists(st.sampled_from("WJFSR"), unique=True, max_size=3).map("".join),
)
tenths = st.integers(0, 10**7).map(lambda k: k / 10)
syncs = st.one_of(
    st.sampled_from([Sync("delayed"), Sync("pending")]),
    st.builds(
        Sync,
        action=st.sampled_from(["resync", "recovery", "reshape", "check"]),
        percent=st.integers(0, 1000).map(lambda k: k / 10),
        done_blocks=st.integers(0, 2**50),
        total_blocks=st.integers(0, 2**50),
        finish_min=st.none() | tenths,
        speed_kb_s=st.none() | st.integers(0, 10**7),
    ),
    st.builds(Sync, action=st.just("check"), percent=st.just(0.0)),
)
bitmaps = st.builds(
    Bitmap,
    pages_used=st.integers(0, 10**5),
    pages_total=st.integers(0, 10**5),
    kb=st.integers(0, 10**6),
    chunk=st.sampled_from(["4KB", "512KB", "16384KB", "65536KB", "131072KB", "512B"]),
)


@st.composite
def arrays(draw: st.DrawFn) -> Array:
    level = draw(st.none() | st.sampled_from(LEVELS))
    # status() is only printed by a running personality: no level, no chunk or [n/m] [UU_].
    has_status = level is not None
    disks = (
        draw(st.none() | st.tuples(st.integers(0, 64), st.integers(0, 64))) if has_status else None
    )
    return Array(
        name=f"md{draw(st.integers(0, 127))}",
        state=draw(st.sampled_from(mdstat.STATES)),
        read_only=draw(st.booleans()),
        auto_read_only=draw(st.booleans()),
        level=level,
        super=draw(
            st.none() | st.sampled_from(["1.0", "1.1", "1.2", "external:imsm", "external:/md127/0"])
        ),
        blocks=draw(st.none() | st.integers(0, 2**55)),
        chunk_kb=draw(st.none() | st.integers(1, 2**20)) if has_status else None,
        devices=tuple(draw(st.lists(devices, max_size=12))),
        raid_disks=disks[0] if disks else None,
        active_disks=disks[1] if disks else None,
        status=draw(st.none() | st.text("U_", min_size=1, max_size=24)) if has_status else None,
        bitmap=draw(st.none() | bitmaps),
        sync=draw(st.none() | syncs),
    )


@settings(max_examples=200, deadline=None)
@given(
    personalities=st.none() | st.lists(st.sampled_from(LEVELS), unique=True).map(tuple),
    states=st.lists(arrays(), max_size=6).map(tuple),
)
def test_rendered_state_parses_back_to_the_same_values(
    personalities: tuple[str, ...] | None, states: tuple[Array, ...]
) -> None:
    state = MdStat(personalities=personalities, arrays=states)
    text = mdstat.render(state)
    assert mdstat_parse.parse(text) == state
