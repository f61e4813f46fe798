"""Arrays as the kernel shows them now, and their sample history."""

import json
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from app.live import array_view, forecasts
from app.shapes import documents
from app.shapes.arrays import ArrayList, DiagnosisBody, Samples
from app.store import history
from app.web.deps import DbDep, SamplesCacheDep, SnapshotDep

router = APIRouter(prefix="/api/arrays", tags=["arrays"])


@router.get("")
def list_arrays(snapshot: SnapshotDep) -> ArrayList:
    """The arrays as the sampler's last tick read them (`as_of`, unix seconds)."""
    views = [array_view.array_view(state) for state in snapshot.arrays]
    return ArrayList(
        as_of=snapshot.ts,
        personalities=list(snapshot.mdstat.personalities)
        if snapshot.mdstat.personalities
        else None,
        arrays=views,
        failed=[view.name for view in views if view.failed],  # the most urgent news
        warnings=list(snapshot.mdstat.warnings),
    )


@router.get("/{name}/samples", responses=documents(Samples))
def array_samples(
    name: str,
    snapshot: SnapshotDep,
    conn: DbDep,
    samples_cache: SamplesCacheDep,
    since: Annotated[float | None, Query(ge=0, description="unix seconds")] = None,
    until: Annotated[float | None, Query(ge=0, description="unix seconds")] = None,
    points: Annotated[int, Query(ge=2, le=5000)] = 500,
) -> Response:
    """Samples downsampled to at most `points`, keeping each bucket's slowest and fastest."""
    if snapshot.array(name) is None and not history.array_known(conn, name):
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    if since is not None and until is not None and since > until:
        raise HTTPException(status_code=422, detail="since must not be after until")
    state = snapshot.array(name)

    def answer() -> bytes:
        if (
            state is not None
            and state.run is None
            and snapshot.ts is not None
            and (until or 1e18) >= snapshot.ts
        ):
            # Idle: the last stored sample holds until now, one more point on the line.
            picked = history.carried_to(
                history.samples(conn, name, since, until, points - 1), snapshot.ts
            )
        else:
            picked = history.samples(conn, name, since, until, points)
        # Plain objects of numbers and strings: json.dumps directly is several times faster
        # than FastAPI's generic encoder on 500 samples, which was half of this endpoint's time.
        return json.dumps({"array": name, "samples": [p._asdict() for p in picked]}).encode()

    # Asked again before the next tick (a loop on the LAN): the same bytes, no query.
    cached = samples_cache.get(snapshot.ts, (name, since, until, points), answer)
    return Response(cached, media_type="application/json")


# An array that runs nothing answers only DiagnosisBody's first five fields, as the code sets them.
@router.get("/{name}/diagnosis", response_model_exclude_unset=True)
def array_diagnosis(name: str, snapshot: SnapshotDep) -> DiagnosisBody:
    """What holds the array's sync back, with the evidence, as of the sampler's last tick; its
    advice judged beside the boost estimate GET /api/arrays/{name}/forecast offers."""
    if snapshot.array(name) is None:
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    found = forecasts.diagnosis(snapshot, name)
    if found is not None:
        return found.shape()
    return DiagnosisBody(array=name, ts=snapshot.ts, running=False, verdict=None, sentence=None)
