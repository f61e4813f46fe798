"""POST /api/plan against the real server (uvicorn) on the demo's simulated box."""

from pathlib import Path

from app.shapes.change_plan import PlanBody
from tests.server import Server, wait_for

TB = 10**12


def test_the_demo_plans_its_next_disk_from_the_grow_it_watches(tmp_path: Path):
    with Server(["demo", "--speedup", "300", "--state-dir", str(tmp_path)]) as server:

        def measured() -> PlanBody | None:
            status, body = server.request(
                "POST", "/api/plan", {"change": "add", "disk_bytes": 4 * TB}
            )
            assert status == 200, body
            plan = PlanBody.model_validate(body)
            return plan if "from the grow of md2" in plan.steps[0].why else None

        plan = wait_for(measured, 30, "a plan resting on md2's grow")
        assert plan.pool == "SHR-1" and plan.arrays == ["md2", "md3"]
        assert [(s.array, s.action, s.level_after, s.disks_after) for s in plan.steps] == [
            ("md2", "grow", "raid5", 5),
            ("md3", "grow", "raid5", 4),  # md3 as the running expansion leaves it: on sdd too
        ]
        assert plan.steps[0].knee == 0.75 and plan.steps[1].knee == 2 / 3
        assert "x5 the pace before it" in plan.steps[0].why  # md2 has not reached its knee yet
        assert plan.steps[0].why.count("from the grow of md2 (running) on") == 2
        assert plan.total is not None and plan.boost_total is not None
        assert plan.total.low_s < plan.total.seconds < plan.total.high_s
        assert plan.capacity_before.usable_bytes < plan.capacity_after.usable_bytes  # type: ignore[union-attr]
        assert "as the job running now (md2, md3) leaves it" in plan.notes[0]

        status, body = server.request(
            "POST", "/api/plan", {"change": "replace", "disk_bytes": 4 * TB, "member": "sdc"}
        )
        assert status == 200
        assert [(s["array"], s["action"]) for s in body["steps"]] == [
            ("md2", "rebuild"),
            ("md3", "grow"),
        ]
        for bad, says in (
            ({"change": "add", "disk_bytes": -1}, "greater than 0"),
            ({"change": "replace", "disk_bytes": 4 * TB, "member": "sdq"}, "not a disk"),
            ({"change": "replace", "disk_bytes": 4 * TB}, "names the member"),
        ):
            status, body = server.request("POST", "/api/plan", bad)
            assert status == 422 and says in str(body["detail"]), body
        runs = server.get("/api/runs")["runs"]
        assert [(r["array"], r["action"]) for r in runs] == [("md2", "reshape")]
