"""app/kernel/mdstat_parse.py against real captures (tests/fixtures/mdstat) and hostile input."""

import json
import random
from pathlib import Path

import pytest

from app.kernel import mdstat_parse
from app.md import mdstat
from app.md.mdstat import Array, Bitmap, Device, MdStat, Sync
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "mdstat"
CAPTURES = sorted(FIXTURES.glob("*.txt"))


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def test_at_least_35_real_captures() -> None:
    assert len(CAPTURES) >= 35
    assert all(path.with_suffix(".expected.json").exists() for path in CAPTURES)


@pytest.mark.parametrize("capture", CAPTURES, ids=[path.stem for path in CAPTURES])
def test_real_capture_parses_to_hand_written_facts(capture: Path) -> None:
    expected = json.loads(capture.with_suffix(".expected.json").read_text())
    parsed = mdstat_parse.parse(read(capture))
    assert parsed.to_json() == expected
    assert parsed.warnings == ()


def test_to_json_is_what_json_round_trips_to() -> None:
    parsed = mdstat_parse.parse(read(FIXTURES / "01-node-exporter-composite.txt"))
    assert json.loads(json.dumps(parsed.to_json())) == parsed.to_json()


# --- hostile input: a clean result or a ValueError naming the problem, nothing else -------------

SMALL = read(FIXTURES / "22-telegraf-raid10-check-bitmap.txt")
COMPOSITE = read(FIXTURES / "01-node-exporter-composite.txt")


def outcome(text: str) -> MdStat | ValueError:
    try:
        return mdstat_parse.parse(text)
    except ValueError as error:
        assert str(error), "a ValueError must say what is wrong"
        return error


@pytest.mark.parametrize("text", ["", " ", "\n\n\n", "   \t  \n      \n"])
def test_empty_or_whitespace_is_an_empty_mdstat(text: str) -> None:
    assert mdstat_parse.parse(text) == MdStat(personalities=None, arrays=(), warnings=())


def test_binary_with_nul_bytes_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="NUL"):
        mdstat_parse.parse("Personalities : [raid1]\x00\x01\x02md0 : active")


def test_text_that_is_no_mdstat_is_refused() -> None:
    # Unraid's /proc/mdstat is key=value lines (https://github.com/prometheus/node_exporter/issues/2642).
    with pytest.raises(ValueError, match="not an mdstat"):
        mdstat_parse.parse("sbName=/boot/config/super.dat\nsbVersion=2.9.13\nmdState=STARTED\n")


@pytest.mark.parametrize("seed", range(200))
def test_random_bytes_decoded_end_cleanly(seed: int) -> None:
    rng = random.Random(seed)
    blob = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 2000)))
    assert isinstance(outcome(blob.decode("utf-8", errors="replace")), MdStat | ValueError)


@pytest.mark.parametrize("source", [SMALL, COMPOSITE], ids=["raid10-check", "composite"])
def test_every_truncation_of_a_real_file_ends_cleanly(source: str) -> None:
    full = mdstat_parse.parse(source)
    for cut in range(len(source) + 1):
        result = outcome(source[:cut])
        if isinstance(result, MdStat):
            assert len(result.arrays) <= len(full.arrays)
            # Whatever survives the cut is never more than the kernel printed.
            for array in result.arrays:
                assert array.name in {a.name for a in full.arrays}


def test_absurd_block_count_drops_that_line_with_a_warning() -> None:
    parsed = mdstat_parse.parse(
        "Personalities : [raid1]\n"
        "md0 : active raid1 sdb1[1] sda1[0]\n"
        "      99999999999999999999999 blocks [2/2] [UU]\n"
    )
    assert parsed.arrays[0].blocks is None
    assert parsed.arrays[0].devices == (Device("sdb1", 1, ""), Device("sda1", 0, ""))
    assert any("absurd number" in w for w in parsed.warnings)


def test_number_with_thousands_of_digits_is_absurd_not_a_crash() -> None:
    parsed = mdstat_parse.parse(
        f"md0 : active raid0 sda[0]\n      {'9' * 5000} blocks 64k chunks\n"
    )
    assert parsed.arrays[0].blocks is None
    assert any("absurd number" in w for w in parsed.warnings)


def test_absurd_member_index_loses_the_array_with_a_warning() -> None:
    parsed = mdstat_parse.parse(
        "Personalities : [raid1]\nmd0 : active raid1 sda1[99999999999999999999]\n"
    )
    assert parsed.arrays == ()
    assert any("absurd number" in w for w in parsed.warnings)


def test_percent_over_100_gives_no_sync_and_a_warning() -> None:
    parsed = mdstat_parse.parse(
        "md6 : active raid1 sdb2[2] sda2[0]\n"
        "      195310144 blocks [2/1] [U_]\n"
        "      [=>...................]  recovery = 999.9% (16775552/195310144)"
        " finish=17.0min speed=259783K/sec\n"
    )
    assert parsed.arrays[0].sync is None
    assert parsed.arrays[0].status == "U_"
    assert any("999.9" in w for w in parsed.warnings)


def test_malformed_progress_line_gives_sync_none_and_a_warning() -> None:
    parsed = mdstat_parse.parse(
        "md2 : active raid5 sdd5[4] sda5[0] sdc5[5] sdb5[1]\n"
        "      5846049792 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/4] [UUUU]\n"
        "      [=====>...............]  reshape = about a quarter\n"
    )
    assert parsed.arrays[0].sync is None
    assert parsed.arrays[0].blocks == 5846049792
    assert parsed.warnings == (
        "line 3: md2: malformed progress line "
        "'      [=====>...............]  reshape = about a quarter'",
    )


def test_unknown_line_is_skipped_with_a_warning() -> None:
    parsed = mdstat_parse.parse(
        "md0 : active raid1 sdb1[1] sda1[0]\n"
        "      248896 blocks [2/2] [UU]\n"
        "      consistency policy: who knows\n"
    )
    assert parsed.arrays[0].status == "UU"
    assert parsed.warnings == ("line 3: unknown line skipped: 'consistency policy: who knows'",)


def test_header_without_state_is_dropped_and_named() -> None:
    parsed = mdstat_parse.parse(
        "Personalities : [raid1]\nmd0 : raid1 sda1[0] sdb1[1]\n      248896 blocks [2/2] [UU]\n"
    )
    assert parsed.arrays == ()
    assert parsed.warnings[0] == "line 2: array md0 has no state (active, inactive, broken)"


def test_garbage_between_arrays_keeps_both_arrays() -> None:
    parsed = mdstat_parse.parse(
        "Personalities : [raid1]\n"
        "md1 : active raid1 sdb2[1] sda2[0]\n"
        "      136448 blocks [2/2] [UU]\n"
        "%%% garbage \x7f line ###\n"
        "]]]][[[[ (((( ))))\n"
        "md0 : active raid1 sdb1[1] sda1[0]\n"
        "      16787776 blocks [2/2] [UU]\n"
        "unused devices: <none>\n"
    )
    assert [(a.name, a.blocks) for a in parsed.arrays] == [("md1", 136448), ("md0", 16787776)]
    assert len(parsed.warnings) == 2


def test_one_megabyte_line_without_spaces_ends_cleanly() -> None:
    assert isinstance(outcome("md0 : active " + "sda[" * 250_000), MdStat | ValueError)
    assert isinstance(outcome("[" + "=" * 1_000_000 + "]  resync = 1%"), MdStat | ValueError)


def test_ten_megabyte_file_of_repeated_arrays_parses_every_array() -> None:
    block = (
        "md3 : active raid5 sdd6[2] sda6[0] sdb6[1]\n"
        "      1953494784 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/3] [UUU]\n"
        "      [=====>...............]  reshape = 25.1% (491263360/1953494784)"
        " finish=5198.4min speed=4687K/sec\n"
        "      bitmap: 0/15 pages [0KB], 65536KB chunk\n\n"
    )
    copies = 10 * 2**20 // len(block) + 1
    parsed = mdstat_parse.parse("Personalities : [raid5]\n" + block * copies)
    assert len(parsed.arrays) == copies
    assert parsed.arrays[-1] == parsed.arrays[0]
    assert parsed.arrays[-1].sync == Sync("reshape", 25.1, 491263360, 1953494784, 5198.4, 4687)


# --- md's "broken" state (Linux 6.12+): a failed array is kept with every field, never dropped ---

# md.c md_seq_show() since Linux 6.12 (commit 2d2b3bc145b9): "broken" where "active" stood.
BROKEN_MD1 = (
    "md1 : broken raid5 sdb1[1](F) sdc1[2](F) sda1[0]\n"
    "      3906764800 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/1] [U__]\n"
    "      \n"
)
HEALTHY_MD0 = "md0 : active raid1 sdb1[1] sda1[0]\n      2490176 blocks [2/2] [UU]\n      \n"
PERSONALITIES = "Personalities : [raid1] [raid6] [raid5] [raid4] \n"
UNUSED = "unused devices: <none>\n"


def test_broken_alone_is_kept_with_every_field() -> None:
    parsed = mdstat_parse.parse(PERSONALITIES + BROKEN_MD1 + UNUSED)
    assert parsed.warnings == ()
    assert parsed.arrays == (
        Array(
            name="md1",
            state="broken",
            read_only=False,
            auto_read_only=False,
            level="raid5",
            super="1.2",
            blocks=3906764800,
            chunk_kb=512,
            devices=(Device("sdb1", 1, "F"), Device("sdc1", 2, "F"), Device("sda1", 0, "")),
            raid_disks=3,
            active_disks=1,
            status="U__",
            bitmap=None,
            sync=None,
        ),
    )
    assert parsed.arrays[0].broken and parsed.arrays[0].degraded


def test_broken_beside_healthy_arrays_keeps_all_in_file_order() -> None:
    parsed = mdstat_parse.parse(
        PERSONALITIES + HEALTHY_MD0 + BROKEN_MD1 + HEALTHY_MD0.replace("md0", "md2") + UNUSED
    )
    assert [(a.name, a.state) for a in parsed.arrays] == [
        ("md0", "active"),
        ("md1", "broken"),
        ("md2", "active"),
    ]
    assert [a.broken for a in parsed.arrays] == [False, True, False]
    assert parsed.warnings == ()


def test_broken_with_faulty_members_keeps_their_flags_and_slots() -> None:
    # raid1 keeps its last member In_sync when it breaks (raid1.c raid1_error, MD_BROKEN).
    parsed = mdstat_parse.parse(
        "md4 : broken raid1 sdd2[1](F) sdc2[0](W)\n      976630464 blocks [2/1] [U_]\n"
    )
    md4 = parsed.arrays[0]
    assert md4.devices == (Device("sdd2", 1, "F"), Device("sdc2", 0, "W"))
    assert [d.name for d in md4.devices if "F" in d.flags] == ["sdd2"]
    assert (md4.raid_disks, md4.active_disks, md4.status) == (2, 1, "U_")


def test_broken_with_a_bitmap_line_keeps_the_bitmap() -> None:
    text = (
        "md2 : broken raid6 sdf3[4](F) sde3[3](F) sdd3[2](F) sdc3[1] sdb3[0]\n"
        "      11706562560 blocks super 1.2 level 6, 64k chunk, algorithm 2 [5/2] [UU___]\n"
        "      bitmap: 3/30 pages [12KB], 65536KB chunk\n"
        "\n"
    )
    parsed = mdstat_parse.parse(text)
    md2 = parsed.arrays[0]
    assert (md2.state, md2.level, md2.status) == ("broken", "raid6", "UU___")
    assert md2.bitmap == Bitmap(3, 30, 12, "65536KB")
    assert parsed.warnings == ()
    assert mdstat.render(parsed) == text + UNUSED  # the kernel's exact layout


def test_broken_read_only_flag_follows_the_state_word() -> None:
    # md_seq_show(): the state, then " (read-only)" or " (auto-read-only)", then the personality.
    parsed = mdstat_parse.parse(
        "md5 : broken (auto-read-only) raid0 sdb4[1] sda4[0]\n      10 blocks 64k chunks\n"
    )
    md5 = parsed.arrays[0]
    assert (md5.state, md5.auto_read_only, md5.level, len(md5.devices)) == (
        "broken",
        True,
        "raid0",
        2,
    )


def test_only_broken_arrays_is_still_an_mdstat() -> None:
    assert [a.name for a in mdstat_parse.parse(BROKEN_MD1).arrays] == ["md1"]


def test_unknown_state_is_kept_as_printed_with_a_warning() -> None:
    parsed = mdstat_parse.parse(
        PERSONALITIES + HEALTHY_MD0 + BROKEN_MD1.replace("broken", "frozen-ish") + UNUSED
    )
    md1 = parsed.array("md1")
    assert md1 is not None and md1.state == "frozen-ish" and not md1.broken
    assert (md1.level, md1.blocks, md1.status) == ("raid5", 3906764800, "U__")
    assert [d.name for d in md1.devices] == ["sdb1", "sdc1", "sda1"]
    assert parsed.warnings == ("line 5: md1: unknown state 'frozen-ish' kept as printed",)
