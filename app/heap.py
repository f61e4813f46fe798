"""The C heap of the long-running server (issue 27: RSS after the page's polls).

glibc's malloc gives each thread that allocates its own arena (FastAPI's worker threads, the
sampler's, asyncio.to_thread's) and keeps the pages freed inside a heap instead of giving them back.
Two measured sources of resident memory nobody uses: the per-thread arenas (about 1.2 MiB after
the polls), and the freed heap a Jinja page compile leaves (about 1.7 MiB: the template's AST and
generated source; the compiled code it keeps is smaller). So the server runs with one arena, and
gives freed pages back after a render that compiled a template (a few times per process: the
environment caches them). On a libc without these calls (musl) both are no-ops.
docs/performance.md has the figures and the command.
"""

import ctypes
from typing import Any

M_ARENA_MAX = -8  # <malloc.h>: mallopt()'s parameter for the most arenas


def _libc() -> Any:
    try:
        return ctypes.CDLL(None)  # the C library the interpreter itself is linked with
    except OSError:
        return None


_LIBC = _libc()


def one_arena() -> bool:
    """Every thread allocates from the main arena. Call before the server starts its threads
    (arenas are made at a thread's first malloc). True when the C library took it."""
    mallopt = getattr(_LIBC, "mallopt", None)
    return mallopt is not None and mallopt(M_ARENA_MAX, 1) == 1


def give_back() -> bool:
    """Return the heap's free pages to the kernel (glibc's malloc_trim(0), every arena). True
    when some memory was released."""
    trim = getattr(_LIBC, "malloc_trim", None)
    return trim is not None and trim(0) == 1
