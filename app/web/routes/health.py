"""Liveness for Docker's HEALTHCHECK and monitors."""

from fastapi import APIRouter

from app.shapes import Health
from app.web.deps import ReconcileDep, SamplerDep, SettingsDep, SnapshotDep, TuningAccessDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(
    settings: SettingsDep,
    snapshot: SnapshotDep,
    sampler: SamplerDep,
    access: TuningAccessDep,
    reconcile: ReconcileDep,
) -> Health:
    return Health(
        mdstat=snapshot.found_mdstat,
        simulated=settings.demo,
        last_sample_error=sampler.latest.error,
        tuning_writable=access.writable,
        tuning=access.summary(),
        reconcile=reconcile,
    )
