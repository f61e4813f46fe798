"""host.py, the only code that opens /proc or /sys: paths stay under the roots, names are
checked, missing files read as None, writes never create a file."""

from pathlib import Path

import pytest

from app.kernel.host import Host
from app.md.disks import MemberDisk
from tests.kernel_tree import KernelTree, md_thread, syncing_box

PROC_IO = (
    "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\nread_bytes: 4096\n"
    "write_bytes: 323932160\ncancelled_write_bytes: 0\n"
)


def test_an_array_s_attributes_and_the_global_limits(tree: KernelTree) -> None:
    syncing_box(tree)
    host = Host(tree.proc, tree.sys)
    sysfs = host.read_array_sysfs("md2")
    assert sysfs.sync_action == "reshape"
    assert sysfs.stripe_cache_size == 513
    assert host.read_global_speed_limits() == (10000, 200000)
    assert host.read_meminfo()["MemAvailable"] == 4000000


@pytest.mark.parametrize("name", ["../etc", "md2/..", "sda", "md", "MD2", ""])
def test_a_name_that_is_no_array_builds_no_path(tree: KernelTree, name: str) -> None:
    with pytest.raises(ValueError):
        Host(tree.proc, tree.sys).md_attr_path(name, "sync_action")


def test_knob_paths_stay_under_their_root(tree: KernelTree) -> None:
    host = Host(tree.proc, tree.sys)
    assert host.knob_path("sys:block/{array}/md/stripe_cache_size", "md2") == (
        tree.sys / "block" / "md2" / "md" / "stripe_cache_size"
    )
    assert host.knob_path("proc:sys/dev/raid/speed_limit_min", None) == (
        tree.proc / "sys" / "dev" / "raid" / "speed_limit_min"
    )
    with pytest.raises(ValueError):
        host.knob_path("sys:block/{disk}/device/queue_depth", "../sda")


def test_a_missing_file_reads_as_none_and_is_never_created(tree: KernelTree) -> None:
    host = Host(tree.proc, tree.sys)
    missing = tree.sys / "block" / "md9" / "md" / "stripe_cache_size"
    assert host.read(missing) is None
    with pytest.raises(FileNotFoundError):
        host.write(missing, "4096")
    assert not missing.exists()


def test_a_write_is_one_line_like_echo(tree: KernelTree) -> None:
    syncing_box(tree)
    host = Host(tree.proc, tree.sys)
    path = host.md_attr_path("md2", "stripe_cache_size")
    host.write(path, "4096")
    assert path.read_text() == "4096\n"


def test_the_disk_behind_a_member_partition(tree: KernelTree) -> None:
    syncing_box(tree)
    host = Host(tree.proc, tree.sys)
    assert host.whole_disk("sda5") == "sda"
    assert host.whole_disk("sda") == "sda"
    assert host.whole_disk("sdz9") is None
    assert host.has_block_device("sda") and not host.has_block_device("sdz")


def test_a_member_s_whole_disk_size_in_kib(tree: KernelTree) -> None:
    """/sys/block/<disk>/size counts 512-byte sectors; a disk read once for its two members; a
    disk that is gone, or a size that is no number, is left out."""
    syncing_box(tree)
    tree.write("sys/block/sda/size", "7814037168\n")  # an 8 TB disk (4 KiB sectors too)
    tree.write("sys/block/sdb/size", "garbage\n")
    host = Host(tree.proc, tree.sys)
    sizes = host.read_disk_kib(["sda5", "sda1", "sdb5", "sdc5", "sdz5"])
    assert sizes == {"sda": 3907018584}


def test_each_member_s_disk_with_its_size_and_model(tree: KernelTree) -> None:
    """The disk under each member with the model sysfs prints (padded, as libata
    does), DSM 7's sataN disks (partitions sataNpM) as found; no model file: None."""
    syncing_box(tree)
    tree.write("sys/block/sda/size", "7814037168\n")
    tree.write("sys/block/sda/device/model", "WDC WD40EFRX-68N\n")
    tree.write("sys/block/sata2/size", "3907029168\n")
    tree.write("sys/block/sata2/device/model", "ST4000VN008-2DR1  \n")
    (tree.sys / "block/sata2/sata2p5").mkdir(parents=True)
    tree.write("sys/block/sdb/device/model", "\x01\x02\n")  # unprintable: no model
    host = Host(tree.proc, tree.sys)
    disks = host.read_member_disks(["sda5", "sata2p5", "sdb5", "sdz5"])
    assert disks["sda5"] == MemberDisk("sda", 3907018584, "WDC WD40EFRX-68N")
    assert disks["sata2p5"] == MemberDisk("sata2", 1953514584, "ST4000VN008-2DR1")
    assert disks["sdb5"].model is None and "sdz5" not in disks


def test_whether_a_disk_spins(tree: KernelTree) -> None:
    syncing_box(tree)
    tree.write("sys/block/sda/queue/rotational", "1\n")
    tree.write("sys/block/sdb/queue/rotational", "0\n")
    tree.write("sys/block/sdc/queue/rotational", "2\n")
    host = Host(tree.proc, tree.sys)
    assert host.read_rotational(["sda", "sdb", "sdc", "sdd"]) == {"sda": True, "sdb": False}
    with pytest.raises(ValueError):
        host.read_rotational(["../etc"])


def test_host_reads_processes_in_the_tree(tmp_path: Path) -> None:
    tree = KernelTree(tmp_path)
    md_thread(tree, 412, "md2_raid5", 900)
    tree.write("proc/412/io", PROC_IO)
    tree.write("proc/99/comm", "broken")
    tree.write("proc/99/stat", "garbage")
    host = Host(tree.proc, tree.sys)
    assert host.pids() == [99, 412]
    assert host.read_pid_comm(412) == "md2_raid5"
    stat = host.read_pid_stat(412)
    assert stat is not None and stat.cpu_ticks == 900
    assert host.read_pid_stat(99) is None  # unparsable: as if gone
    assert host.read_pid_stat(5) is None  # gone
    assert host.read_pid_io(99) is None
    io = host.read_pid_io(412)
    assert io is not None and io.write_bytes == 323932160


def test_the_boot_id_is_read_once_and_kept(tree: KernelTree) -> None:
    host = Host(tree.proc, tree.sys)
    assert host.boot_id is None  # no such file: unknown, not an error
    again = Host(tree.proc, tree.sys)
    tree.write("proc/sys/kernel/random/boot_id", "5e1f7c2a-1111-4222-8333-444455556666")
    assert again.boot_id == "5e1f7c2a-1111-4222-8333-444455556666"
    tree.write("proc/sys/kernel/random/boot_id", "another-boot")
    assert again.boot_id == "5e1f7c2a-1111-4222-8333-444455556666"
    tree.write("proc/uptime", "42.50 80.00")
    assert again.read_uptime_s() == 42.5
