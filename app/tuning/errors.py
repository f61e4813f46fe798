"""The one base of every error a tuning action raises on purpose: each says its HTTP status and
body, so app/web/errors.py maps them all in one place (nothing was written, or what was, was put
back)."""

from typing import Any, ClassVar


class TuningError(Exception):
    """A tuning request that cannot be done as asked."""

    status: ClassVar[int] = 409  # HTTP: the box's state refuses it now
    retry_after_s: ClassVar[int | None] = None  # a Retry-After header, for a state that passes

    def detail(self) -> dict[str, Any]:
        """The JSON body's detail: at least a "message" for people."""
        return {"message": str(self)}
