"""Liveness for Docker's HEALTHCHECK and monitors."""

from fastapi import APIRouter, Response

from app.shapes import Health
from app.web.deps import ReconcileDep, SamplerDep, SettingsDep, SnapshotDep, TuningAccessDep

router = APIRouter(tags=["health"])


@router.get("/healthz", responses={503: {"model": Health, "description": "disk full"}})
def healthz(
    settings: SettingsDep,
    snapshot: SnapshotDep,
    sampler: SamplerDep,
    access: TuningAccessDep,
    reconcile: ReconcileDep,
    response: Response,
) -> Health:
    full = sampler.disk_full_since is not None
    if full:
        response.status_code = 503  # Docker's HEALTHCHECK marks the container unhealthy
    return Health(
        status="disk full" if full else "ok",
        mdstat=snapshot.found_mdstat,
        simulated=settings.demo,
        last_sample_error=sampler.latest.error,
        tuning_writable=access.writable,
        tuning=access.summary(),
        reconcile=reconcile,
    )
