"""app/heap.py on this machine's glibc: the calls take, and give_back() really returns freed heap
pages to the kernel (VmRSS from /proc/self/status, in a child so the suite's heap is untouched)."""

import subprocess
import sys

CHILD = """
import re
from app import heap

def rss_kib():
    return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1))

assert heap.one_arena()
# 40 MB of blocks above obmalloc's 512 bytes and below malloc's mmap threshold: in the heap.
blocks = [bytes(2000) for _ in range(20_000)]
last = blocks[-1]  # keeps the heap's top, so only a trim can return the pages below it
del blocks
before = rss_kib()
heap.give_back()
print(before - rss_kib())
"""


def test_give_back_returns_freed_heap_pages() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    ).stdout
    assert int(out) > 20_000  # KiB of the 40 MB freed
