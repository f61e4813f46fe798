"""Where a preset is written: the arrays it applies to (never a failed one) and each knob's
targets on them (the array, its member disks, or the whole system)."""

from typing import Any

from app.kernel.host import ARRAY_NAME, Host
from app.live.array_view import role_of
from app.md import mdstat
from app.md.knobs import Knob
from app.tuning.errors import TuningError


class PlanError(TuningError, ValueError):
    """The request cannot be planned (unknown array, min above max, ...); nothing was written."""

    status = 422


class ArrayFailed(TuningError):
    """The arrays to tune have failed (md gave up on them): mdboost never tunes those."""

    def __init__(self, arrays: list[str]) -> None:
        self.arrays = arrays
        have, its = ("has", "its") if len(arrays) == 1 else ("have", "their")
        super().__init__(
            f"{' and '.join(arrays)} {have} failed and {its} data is not available: mdboost "
            "never tunes a failed array. Check the disks first."
        )

    def detail(self) -> dict[str, Any]:
        return {"message": str(self), "failed": self.arrays}


def target_arrays(
    md: mdstat.MdStat, requested: list[str] | None, failed_arrays: list[str]
) -> list[mdstat.Array]:
    """The arrays a preset applies to: those asked for, else those syncing, else the data arrays;
    never a failed one (ArrayFailed when one is asked for, or when nothing else is left)."""
    if requested:
        if len(set(requested)) != len(requested):
            raise PlanError("each array may be named only once")
        chosen = []
        for name in requested:
            array = md.array(name) if ARRAY_NAME.fullmatch(name) else None
            if array is None:
                raise PlanError(f"no array named {name[:40]!r} in /proc/mdstat")
            chosen.append(array)
        if refused := [a.name for a in chosen if a.name in failed_arrays]:
            raise ArrayFailed(refused)
        return chosen
    candidates = [
        a
        for a in md.arrays
        if ARRAY_NAME.fullmatch(a.name) and a.state == "active" and a.name not in failed_arrays
    ]
    syncing = [a for a in candidates if a.syncing]
    if syncing:
        return syncing
    data = [a for a in candidates if role_of(a) == "data"]
    if not data and failed_arrays:
        raise ArrayFailed(failed_arrays)
    return data


def knob_targets(
    knob: Knob, arrays: list[mdstat.Array], host: Host
) -> list[tuple[str | None, str | None]]:
    """(target, reason to skip or None) for each place this knob would be written."""
    if knob.scope == "global":
        return [(None, None)]
    if knob.scope == "array":
        return [
            (
                a.name,
                None
                if knob.applies_to(a.level)
                else f"only for {'/'.join(sorted(knob.levels or ()))}",
            )
            for a in arrays
        ]
    disks: list[str] = []
    for array in arrays:
        for device in array.devices:
            try:
                disk = host.whole_disk(device.name)
            except ValueError:
                disk = None
            if disk is not None and disk not in disks:
                disks.append(disk)
    return [(disk, None) for disk in disks]
