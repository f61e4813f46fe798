"""Tuning: presets, plans (dry runs), apply, revert and the one-click boost."""

from typing import Annotated

from fastapi import APIRouter, Body, Path
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.shapes.tuning import PresetPlan, Presets, Sweep, TuningDone, TuningStatus
from app.tuning import view as tuning_view
from app.web.deps import DbDep, SnapshotDep, TunerDep
from app.web.errors import call_tuning
from app.web.security import TuningChangeDep

router = APIRouter(prefix="/api", tags=["tuning"])

PresetName = Annotated[str, Path(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]


class ArraysRequest(BaseModel):
    """Which arrays to tune; left out: those syncing now, else the data arrays. An empty list is
    refused rather than read as "all"."""

    model_config = ConfigDict(extra="forbid", strict=True)

    arrays: list[Annotated[str, Field(pattern=r"^md\d+$")]] | None = Field(
        default=None, min_length=1, max_length=64
    )

    @field_validator("arrays")
    @classmethod
    def _each_once(cls, names: list[str] | None) -> list[str] | None:
        # md2 twice would write its knobs, then fail on the journal's effect row.
        if names is not None and (twice := sorted({n for n in names if names.count(n) > 1})):
            raise ValueError(f"each array at most once: {', '.join(twice)} named more than once")
        return names


class BoostRequest(BaseModel):
    """Strict: "yes", 0 or 1 are not a boolean."""

    model_config = ConfigDict(extra="forbid", strict=True)

    on: bool


@router.get("/tuning")
def tuning_status(tuner: TunerDep, conn: DbDep, snapshot: SnapshotDep) -> TuningStatus:
    return tuning_view.status(tuner, conn, snapshot)


@router.get("/presets")
def list_presets(tuner: TunerDep) -> Presets:
    return tuning_view.presets(tuner)


@router.post("/presets/{name}/plan")
def plan_preset(
    name: PresetName, tuner: TunerDep, body: Annotated[ArraysRequest | None, Body()] = None
) -> PresetPlan:
    return call_tuning(lambda: tuner.plan(name, body.arrays if body else None).shape())


# An apply and a revert answer different fields: each answer only those the code sets
# (response_model_exclude_unset), so the bodies are those the journal's code builds.


@router.post("/presets/{name}/apply", response_model_exclude_unset=True)
def apply_preset(
    name: PresetName,
    tuner: TunerDep,
    who: TuningChangeDep,
    body: Annotated[ArraysRequest | None, Body()] = None,
) -> TuningDone:
    return call_tuning(tuner.apply, name, body.arrays if body else None)


@router.post("/revert", response_model_exclude_unset=True)
def revert(tuner: TunerDep, who: TuningChangeDep) -> TuningDone:
    return call_tuning(tuner.revert, "requested")


@router.post("/boost", response_model_exclude_unset=True)
def boost(body: BoostRequest, tuner: TunerDep, who: TuningChangeDep) -> TuningDone:
    if body.on:
        return call_tuning(tuner.apply, "boost", None)
    return call_tuning(tuner.revert, "boost switched off")


class AutoTuneRequest(BaseModel):
    """The array to sweep; left out: the one array syncing now."""

    model_config = ConfigDict(extra="forbid", strict=True)

    array: str | None = Field(default=None, pattern=r"^md\d+$")


@router.post("/autotune")
def autotune(
    tuner: TunerDep, who: TuningChangeDep, body: Annotated[AutoTuneRequest | None, Body()] = None
) -> Sweep:
    """Start a sweep on the running sync; GET /api/tuning shows it as it measures."""
    return call_tuning(tuner.autotune, body.array if body else None)
