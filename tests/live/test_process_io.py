"""Who competes with a sync: the busiest processes by /proc/PID/io between two scans."""

from app.kernel.host import Host
from app.live.process_io import IO_SCAN_S, IoScan
from tests.kernel_tree import KernelTree


def process(tree: KernelTree, pid: int, comm: str, read_bytes: int, write_bytes: int) -> None:
    tree.write(f"proc/{pid}/comm", comm)
    tree.write(
        f"proc/{pid}/io",
        f"rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: {read_bytes}\n"
        f"write_bytes: {write_bytes}\ncancelled_write_bytes: 0\n",
    )


def test_the_busiest_others_from_two_scans_md_threads_and_idlers_left_out(
    tree: KernelTree,
) -> None:
    for pid, comm in ((10, "rsync"), (11, "synoindexd"), (12, "md2_raid5"), (13, "sshd")):
        process(tree, pid, comm, 0, 0)
    scan = IoScan(Host(tree.proc, tree.sys))
    scan.scan(0.0)
    assert scan.busiest() == ()  # one scan has no rates yet
    mib = 1024 * 1024
    process(tree, 10, "rsync", 60 * mib, 0)
    process(tree, 11, "synoindexd", 0, 30 * mib)
    process(tree, 12, "md2_raid5", 900 * mib, 900 * mib)
    process(tree, 13, "sshd", 1024, 0)
    scan.scan(IO_SCAN_S / 2)
    assert scan.busiest() == ()  # too soon: the first scan's rates still stand
    scan.scan(IO_SCAN_S)
    busiest = scan.busiest()
    assert [(p.pid, p.comm) for p in busiest] == [(10, "rsync"), (11, "synoindexd")]
    assert busiest[0].read_kib_s == 60 * 1024 / IO_SCAN_S
    scan.forget()
    assert scan.busiest() == ()
