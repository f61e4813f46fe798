"""Arrays as the kernel shows them now, and their sample history."""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from app import arrays, history
from app.deps import DbDep, HostDep

router = APIRouter(prefix="/api/arrays", tags=["arrays"])


@router.get("")
def list_arrays(host: HostDep, conn: DbDep) -> dict[str, Any]:
    current = arrays.current(host)
    return {
        "personalities": list(current.personalities) if current.personalities else None,
        "arrays": [arrays.array_view(a, host, conn) for a in current.arrays],
        "warnings": list(current.warnings),
    }


@router.get("/{name}/samples")
def array_samples(
    name: str,
    host: HostDep,
    conn: DbDep,
    since: Annotated[float | None, Query(ge=0, description="unix seconds")] = None,
    until: Annotated[float | None, Query(ge=0, description="unix seconds")] = None,
    points: Annotated[int, Query(ge=2, le=5000)] = 500,
) -> dict[str, Any]:
    if arrays.current(host).array(name) is None and not history.array_known(conn, name):
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    if since is not None and until is not None and since > until:
        raise HTTPException(status_code=422, detail="since must not be after until")
    return {"array": name, "samples": history.samples(conn, name, since, until, points)}
