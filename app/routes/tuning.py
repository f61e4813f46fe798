"""Tuning: presets, plans (dry runs), apply, revert and the one-click boost."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from app import tuning_view
from app.deps import DbDep
from app.planning import PlanError
from app.security import AdminDep
from app.tuning import Busy, Tuner, TuningFailed, UnknownPreset

router = APIRouter(prefix="/api", tags=["tuning"])

PresetName = Annotated[str, Path(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]


class ArraysBody(BaseModel):
    """Which arrays to tune; default: those syncing now, else the data arrays."""

    model_config = ConfigDict(extra="forbid")

    arrays: list[Annotated[str, Field(pattern=r"^md\d+$")]] | None = Field(
        default=None, max_length=64
    )


class BoostBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    on: bool


def tuner(request: Request) -> Tuner:
    found: Tuner = request.app.state.tuner
    return found


def call(action: Any, *args: Any) -> dict[str, Any]:
    """Run one tuning action; its errors become JSON with the right status, never a 500."""
    try:
        result: dict[str, Any] = action(*args)
        return result
    except UnknownPreset as error:
        raise HTTPException(404, detail={"message": str(error)}) from None
    except PlanError as error:
        raise HTTPException(422, detail={"message": str(error)}) from None
    except Busy as error:
        raise HTTPException(409, detail={"message": str(error), "busy": True}) from None
    except TuningFailed as error:
        raise HTTPException(409, detail=error.to_json()) from None


@router.get("/tuning")
def tuning_status(request: Request, conn: DbDep) -> dict[str, Any]:
    return tuning_view.status(tuner(request), conn)


@router.get("/presets")
def list_presets(request: Request) -> dict[str, Any]:
    t = tuner(request)
    return {
        "presets": [
            {
                "name": p.name,
                "summary": p.summary,
                "source": p.source,
                "restore_originals": p.restore_originals,
                "knobs": [s.__dict__ for s in p.settings],
            }
            for p in t.presets.values()
        ],
        "errors": [e.__dict__ for e in t.preset_errors],
    }


@router.post("/presets/{name}/plan")
def plan_preset(
    name: PresetName, request: Request, body: Annotated[ArraysBody | None, Body()] = None
) -> dict[str, Any]:
    t = tuner(request)
    return call(lambda: t.plan(name, body.arrays if body else None).to_json())


@router.post("/presets/{name}/apply")
def apply_preset(
    name: PresetName,
    request: Request,
    admin: AdminDep,
    body: Annotated[ArraysBody | None, Body()] = None,
) -> dict[str, Any]:
    return call(tuner(request).apply, name, body.arrays if body else None)


@router.post("/revert")
def revert(request: Request, admin: AdminDep) -> dict[str, Any]:
    return call(tuner(request).revert, "requested")


@router.post("/boost")
def boost(body: BoostBody, request: Request, admin: AdminDep) -> dict[str, Any]:
    t = tuner(request)
    if body.on:
        return call(t.apply, "boost", None)
    return call(t.revert, "boost switched off")
