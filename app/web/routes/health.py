"""Liveness for Docker's HEALTHCHECK and monitors."""

from typing import Any

from fastapi import APIRouter

from app.web.deps import BoxDep, ReconcileDep, SamplerDep, SettingsDep, TuningAccessDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(
    settings: SettingsDep,
    box: BoxDep,
    sampler: SamplerDep,
    access: TuningAccessDep,
    reconcile: ReconcileDep,
) -> dict[str, Any]:
    latest = sampler.latest
    return {
        "status": "ok",
        "mdstat": box.found_mdstat,
        "simulated": settings.demo,
        "last_sample_error": latest.error,
        "tuning_writable": access.writable,
        # Whether tuning works here and why not: the start-up log's line (issue 26).
        "tuning": access.summary(),
        # What start-up did with a tuning session a stop or crash left open (None: there was none).
        "reconcile": reconcile,
    }
