"""Liveness for Docker's HEALTHCHECK and monitors."""

from typing import Any

from fastapi import APIRouter, Request

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(request: Request) -> dict[str, Any]:
    latest = request.app.state.sampler.latest
    return {
        "status": "ok",
        "mdstat": request.app.state.present.box.found_mdstat,
        "simulated": request.app.state.settings.demo,
        "last_sample_error": latest.error,
        "tuning_writable": request.app.state.tuning_access.writable,
        # Whether tuning works here and why not: the start-up log's line (issue 26).
        "tuning": request.app.state.tuning_access.summary(),
        # What start-up did with a tuning session a stop or crash left open (None: there was none).
        "reconcile": request.app.state.reconcile,
    }
