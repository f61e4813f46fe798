"""A catalogue knob (app/md/knobs.py) as the kernel shows it now, read through the host."""

from app.kernel.host import Host
from app.md.knobs import Knob


def read_knob(host: Host, knob: Knob, target: str | None) -> str | None:
    """The knob as the kernel shows it now, normalised; None when this kernel lacks the file."""
    raw = host.read(host.knob_path(knob.path, target))
    return knob.normalise(raw) if raw is not None else None
