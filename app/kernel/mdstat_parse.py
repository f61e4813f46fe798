"""Pure parser for /proc/mdstat: text in, frozen dataclasses (app.md.mdstat) out; no I/O.

The format is whatever md_seq_show() and the personalities' status() print (drivers/md/md.c,
raid1.c, raid5.c, raid10.c, raid0.c): lines are matched by content, never by column, because real
files differ in indentation, blank lines and trailing lines (tests/fixtures holds captured ones).
"""

import re

from app.md.mdstat import MAX_NUMBER, STATES, Array, Bitmap, Device, MdStat, Sync

# A state is a plain lowercase word; personalities without digits in their name never are one.
_STATE_WORD = re.compile(r"^[a-z][a-z-]*$")
_PERSONALITIES_WITHOUT_DIGITS = frozenset({"linear", "multipath", "faulty"})

_HEADER = re.compile(r"^\s*(?P<name>md[\w/]*)\s*:\s*(?P<rest>.*)$")
_PERSONALITIES = re.compile(r"^\s*Personalities\s*:(?P<rest>.*)$")
_UNUSED = re.compile(r"^\s*unused devices\s*:")
_DEVICE = re.compile(r"^(?P<name>\S+?)\[(?P<index>\d+)\](?P<flags>(?:\([A-Z]\))*)$")
_BLOCKS = re.compile(r"^\s*(?P<blocks>\d+) blocks\b(?P<rest>.*)$")
_SUPER = re.compile(r"\bsuper (?P<super>\S+)")
_CHUNK = re.compile(r"\b(?P<kb>\d+)[kK] (?:chunks?|rounding)\b")
_DISKS = re.compile(r"\[(?P<raid>\d+)/(?P<active>\d+)\]")
_STATUS = re.compile(r"\[(?P<status>[U_]+)\]")
# raid10.c status(): " %d near-copies", " %d far-copies" or " %d offset-copies" (far, shifted).
_COPIES = re.compile(r"\b(?P<n>\d+) (?P<kind>near|far|offset)-copies\b")
# md_bitmap_status(): "bitmap: %lu/%lu pages [%luKB], %lu%s chunk" and maybe ", file: PATH".
_BITMAP = re.compile(
    r"^\s*bitmap:\s*(?P<used>\d+)/(?P<total>\d+) pages \[(?P<kb>\d+)KB\],"
    r"\s*(?P<chunk>\d+[KMG]?B) chunk"
)
_PROGRESS = re.compile(
    r"^\s*(?:\[[=>.]*\]\s*)?(?P<action>resync|recovery|reshape|check)\s*=\s*"
    r"(?P<percent>\d+(?:\.\d+)?)%"
    r"(?:\s*\((?P<done>\d+)/(?P<total>\d+)\))?"
    r"(?:\s*finish=(?P<finish>\d+(?:\.\d+)?)min)?"
    r"(?:\s*speed=(?P<speed>\d+)K/sec)?\s*$"
)
# "[6/6] [UUUUUU]" alone on a line: a mail client wrapped the blocks line (fixture 39).
_DISKS_ONLY = re.compile(r"^\s*\[(?P<raid>\d+)/(?P<active>\d+)\]\s*\[(?P<status>[U_]+)\]\s*$")
_QUEUED = re.compile(r"^\s*(?:resync|recovery|reshape|check)\s*=\s*(?P<what>DELAYED|PENDING)\s*$")
_LOOKS_LIKE_PROGRESS = re.compile(r"\b(?:resync|recovery|reshape|check)\s*=")


class _ArrayBuilder:
    """Collects one array's lines; turns into an Array at the end."""

    def __init__(self, name: str, header_rest: str, line_no: int, warnings: list[str]) -> None:
        self.name = name
        self.warnings = warnings
        self.blocks: int | None = None
        self.super: str | None = None
        self.chunk_kb: int | None = None
        self.raid_disks: int | None = None
        self.active_disks: int | None = None
        self.status: str | None = None
        self.near_copies: int | None = None
        self.far_copies: int | None = None
        self.bitmap: Bitmap | None = None
        self.sync: Sync | None = None
        words = header_rest.split()
        if (
            not words
            or not _STATE_WORD.match(words[0])
            or words[0] in _PERSONALITIES_WITHOUT_DIGITS
        ):
            raise ValueError(
                f"line {line_no}: array {name} has no state (active, inactive, broken)"
            )
        self.state = words[0]
        if self.state not in STATES:
            # A newer kernel's word: keep the array, as printed, rather than lose it.
            warnings.append(f"line {line_no}: {name}: unknown state {self.state!r} kept as printed")
        self.read_only = "(read-only)" in words
        self.auto_read_only = "(auto-read-only)" in words
        self.level: str | None = None
        devices = []
        for position, word in enumerate(words[1:], start=1):
            if word in ("(read-only)", "(auto-read-only)"):
                continue
            device = _DEVICE.match(word)
            if device:
                devices.append(
                    Device(
                        name=device["name"],
                        index=_number(device["index"], line_no),
                        flags=device["flags"].replace("(", "").replace(")", ""),
                    )
                )
            elif self.level is None and not devices and word != "super":
                self.level = word
            else:
                # md.c prints the blocks line only when the array has members; without them
                # " super 1.2 level 5, 64k chunk, ... [4/0] [____]" follows on the header line.
                rest = " ".join(words[position:])
                if not self._details(rest, line_no):
                    warnings.append(f"line {line_no}: {name}: ignored words {rest[:80]!r}")
                break
        self.devices = tuple(devices)

    def _details(self, text: str, line_no: int) -> bool:
        """Read super, chunk, [n/m] and [UU_] from the text after "N blocks"; False if none."""
        found = False
        if sup := _SUPER.search(text):
            self.super = sup["super"]
            found = True
        if chunk := _CHUNK.search(text):
            self.chunk_kb = _number(chunk["kb"], line_no)
            found = True
        if disks := _DISKS.search(text):
            self.raid_disks = _number(disks["raid"], line_no)
            self.active_disks = _number(disks["active"], line_no)
            found = True
        if status := _STATUS.search(text):
            self.status = status["status"]
            found = True
        for copies in _COPIES.finditer(text):
            number = _number(copies["n"], line_no)
            if copies["kind"] == "near":
                self.near_copies = number
            else:
                self.far_copies = number
            found = True
        return found

    def add(self, line: str, line_no: int) -> bool:
        """Consume a detail line; False if it is not one of this array's lines."""
        if blocks := _BLOCKS.match(line):
            self.blocks = _number(blocks["blocks"], line_no)
            self._details(blocks["rest"], line_no)
            return True
        if (wrapped := _DISKS_ONLY.match(line)) and self.status is None:
            self.raid_disks = _number(wrapped["raid"], line_no)
            self.active_disks = _number(wrapped["active"], line_no)
            self.status = wrapped["status"]
            return True
        if bitmap := _BITMAP.match(line):
            self.bitmap = Bitmap(
                pages_used=_number(bitmap["used"], line_no),
                pages_total=_number(bitmap["total"], line_no),
                kb=_number(bitmap["kb"], line_no),
                chunk=bitmap["chunk"],
            )
            return True
        if queued := _QUEUED.match(line):
            self.sync = Sync(action=queued["what"].lower())
            return True
        if progress := _PROGRESS.match(line):
            try:
                self.sync = _sync_from(progress, line_no)
            except ValueError as error:
                self.sync = None
                self.warnings.append(f"{self.name}: malformed progress line: {error}")
            return True
        if _LOOKS_LIKE_PROGRESS.search(line):
            self.sync = None
            self.warnings.append(f"line {line_no}: {self.name}: malformed progress line {line!r}")
            return True
        return False

    def build(self) -> Array:
        return Array(
            name=self.name,
            state=self.state,
            read_only=self.read_only,
            auto_read_only=self.auto_read_only,
            level=self.level,
            super=self.super,
            blocks=self.blocks,
            chunk_kb=self.chunk_kb,
            devices=self.devices,
            raid_disks=self.raid_disks,
            active_disks=self.active_disks,
            status=self.status,
            bitmap=self.bitmap,
            sync=self.sync,
            near_copies=self.near_copies,
            far_copies=self.far_copies,
        )


def _sync_from(progress: re.Match[str], line_no: int) -> Sync:
    percent = float(progress["percent"])
    if percent > 100.0:
        raise ValueError(f"line {line_no}: percent {percent} > 100")
    done = _number(progress["done"], line_no) if progress["done"] else None
    total = _number(progress["total"], line_no) if progress["total"] else None
    finish = float(progress["finish"]) if progress["finish"] else None
    if finish is not None and finish > MAX_NUMBER:
        raise ValueError(f"line {line_no}: absurd finish={finish}")
    return Sync(
        action=progress["action"],
        percent=percent,
        done_blocks=done,
        total_blocks=total,
        finish_min=finish,
        speed_kb_s=_number(progress["speed"], line_no) if progress["speed"] else None,
    )


def _number(text: str, line_no: int) -> int:
    if len(text) > 19:  # more digits than MAX_NUMBER has; also keeps int() off huge strings
        raise ValueError(f"line {line_no}: absurd number {text[:30]}")
    value = int(text)
    if value > MAX_NUMBER:
        raise ValueError(f"line {line_no}: absurd number {text[:30]}")
    return value


def parse(text: str) -> MdStat:
    """Parse /proc/mdstat text. Unknown lines are skipped with a warning; raises ValueError
    naming the line only when the text is not an mdstat at all (binary, or no recognisable line).
    """
    if "\x00" in text:
        raise ValueError("not an mdstat: contains NUL bytes (binary data)")
    warnings: list[str] = []
    personalities: tuple[str, ...] | None = None
    builders: list[_ArrayBuilder] = []
    current: _ArrayBuilder | None = None
    recognised = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if match := _PERSONALITIES.match(line):
            personalities = tuple(re.findall(r"\[([^\]\s]+)\]", match["rest"]))
            recognised += 1
            current = None
            continue
        if _UNUSED.match(line):
            recognised += 1
            current = None
            continue
        if header := _HEADER.match(line):
            try:
                current = _ArrayBuilder(header["name"], header["rest"], line_no, warnings)
            except ValueError as error:
                warnings.append(str(error))
                current = None
                continue
            builders.append(current)
            recognised += 1
            continue
        try:
            consumed = current is not None and current.add(line, line_no)
        except ValueError as error:
            warnings.append(f"{current.name if current else '?'}: {error}")
            consumed = True
        if consumed:
            recognised += 1
        else:
            warnings.append(f"line {line_no}: unknown line skipped: {line.strip()[:80]!r}")
    if recognised == 0 and text.strip():
        raise ValueError("not an mdstat: no line looks like Personalities, mdN : ... or unused")
    return MdStat(
        personalities=personalities,
        arrays=tuple(b.build() for b in builders),
        warnings=tuple(warnings),
    )
