"""app/heap.py on this machine's glibc: after one_arena(), threads that allocate at the same time
share the main arena instead of mapping arenas of their own (in a child process, so the suite's
heap is untouched)."""

import subprocess
import sys

CHILD = """
import sys
import threading

from app import heap

if sys.argv[1] == "one":
    assert heap.one_arena()
barrier = threading.Barrier(4)
kept = []


def allocate():
    barrier.wait()  # all four at once: contention is what makes glibc map a new arena
    kept.append([bytes(2000) for _ in range(5000)])


threads = [threading.Thread(target=allocate) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
# A thread arena is an anonymous read-write mapping aligned to its 64 MiB reservation.
arenas = 0
for line in open("/proc/self/maps"):
    fields = line.split()
    start = int(fields[0].split("-")[0], 16)
    if len(fields) == 5 and fields[1] == "rw-p" and start % (64 << 20) == 0:
        arenas += 1
print(arenas)
"""


def thread_arenas(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_one_arena_keeps_every_thread_in_the_main_arena() -> None:
    assert thread_arenas("many") > 0  # without it, glibc maps arenas for the threads
    assert thread_arenas("one") == 0
