"""One malloc arena for the long-running server.

glibc's malloc gives each thread that allocates an arena of its own (the sampler's thread,
asyncio.to_thread's pool, the notification delivery), and each keeps the pages freed in it. Over
7 simulated days of a running reshape the server's RSS grew from 68 to 75 MiB with an arena per
thread, and 6.6-7.6 MiB less with one (docs/performance.md). The same as MALLOC_ARENA_MAX=1 in the
environment, without asking every way mdboost is started to set it. On a C library without
mallopt (musl) it is a no-op.
"""

import ctypes

M_ARENA_MAX = -8  # <malloc.h>: mallopt()'s parameter for the most arenas


def one_arena() -> bool:
    """Every thread allocates from the main arena. Call before the server starts its threads
    (arenas are made at a thread's first malloc). True when the C library took it."""
    try:
        libc = ctypes.CDLL(None)  # the C library the interpreter itself is linked with
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    return mallopt is not None and mallopt(M_ARENA_MAX, 1) == 1
