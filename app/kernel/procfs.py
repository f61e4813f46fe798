"""Pure parsers for per-process files: /proc/PID/stat and /proc/PID/io (proc(5))."""

from dataclasses import dataclass


@dataclass(frozen=True)
class PidStat:
    """The parts of /proc/PID/stat the diagnosis uses."""

    comm: str  # the thread's name, at most 15 characters ("md2_raid5")
    state: str  # R running, S sleeping, D disk sleep, ...
    utime_ticks: int  # CPU time in user mode, clock ticks (sysconf(_SC_CLK_TCK))
    stime_ticks: int  # CPU time in kernel mode, clock ticks

    @property
    def cpu_ticks(self) -> int:
        return self.utime_ticks + self.stime_ticks


@dataclass(frozen=True)
class PidIo:
    """/proc/PID/io: bytes this process made the block layer fetch or send (not cache hits)."""

    read_bytes: int  # bytes
    write_bytes: int  # bytes


def parse_pid_stat(text: str) -> PidStat:
    """`pid (comm) state ppid ... utime stime ...`; comm may hold spaces and parentheses, so it
    ends at the LAST ')' (proc(5): fields 14 and 15 are utime and stime)."""
    open_at, close_at = text.find("("), text.rfind(")")
    if open_at < 0 or close_at < open_at:
        raise ValueError(f"/proc/PID/stat without (comm): {text[:60]!r}")
    rest = text[close_at + 1 :].split()
    if len(rest) < 13:
        raise ValueError(f"/proc/PID/stat has {len(rest) + 2} fields, expected 15 or more")
    try:
        utime, stime = int(rest[11]), int(rest[12])
    except ValueError:
        raise ValueError(f"/proc/PID/stat utime/stime not numbers: {rest[11:13]!r}") from None
    return PidStat(
        comm=text[open_at + 1 : close_at], state=rest[0], utime_ticks=utime, stime_ticks=stime
    )


def parse_pid_io(text: str) -> PidIo:
    """`name: value` lines; read_bytes and write_bytes must be present."""
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if value.strip().isdigit():
            values[name.strip()] = int(value)
    try:
        return PidIo(read_bytes=values["read_bytes"], write_bytes=values["write_bytes"])
    except KeyError as missing:
        raise ValueError(f"/proc/PID/io without {missing.args[0]}") from None
