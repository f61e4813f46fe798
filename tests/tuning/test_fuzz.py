"""Fuzzing: hypothesis on the tuning planner, schemathesis on the app's own OpenAPI schema."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.md.knobs import CATALOGUE, SYSTEM, stripe_cache_mib
from app.tuning.planning.knob_plan import member_disks, plan_preset
from app.tuning.planning.presets import Preset, Setting
from app.tuning.planning.targets import PlanError
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    mdstat_text,
    progress,
    raid1,
    raid5,
    syncing_box,
)
from tests.server import Server

TOKEN = "fuzz-token-0123456789-0123456789abcdef0123456789"


def knob_values(name: str) -> st.SearchStrategy[str]:
    knob = CATALOGUE[name]
    numbers = st.integers(knob.minimum, knob.maximum).map(lambda n: str(n - n % knob.step))
    if name == "stripe_cache_size":
        return st.one_of(numbers, st.just("auto"))
    if knob.accepts_system:
        return st.one_of(numbers, st.just(SYSTEM))
    return numbers


presets = st.lists(
    st.sampled_from(sorted(CATALOGUE)), min_size=1, max_size=len(CATALOGUE), unique=True
).flatmap(
    lambda names: st.tuples(*(knob_values(n) for n in names)).map(
        lambda values: Preset(
            "fuzz", "fuzz", tuple(Setting(n, v, "fuzz") for n, v in zip(names, values, strict=True))
        )
    )
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    preset=presets,
    current_cache=st.integers(17, 32768),
    available_kib=st.integers(0, 64 * 1024 * 1024),
    budget=st.one_of(st.none(), st.floats(0.5, 4096)),
    global_min=st.integers(1, 500_000),
    syncing=st.booleans(),
)
def test_a_plan_never_leaves_the_catalogue_the_budget_or_min_le_max(
    tmp_path_factory, preset, current_cache, available_kib, budget, global_min, syncing
):
    tree = KernelTree(tmp_path_factory.mktemp("tree"))
    syncing_box(tree)
    line = progress("reshape", 1000, RESHAPE_TOTAL) if syncing else None
    tree.mdstat(mdstat_text(raid5(progress=line), raid1()))
    tree.write("sys/block/md2/md/stripe_cache_size", str(current_cache))
    tree.write("proc/meminfo", f"MemAvailable: {available_kib} kB\n")
    tree.write("proc/sys/dev/raid/speed_limit_min", str(global_min))
    host = Host(tree.proc, tree.sys)
    md = mdstat_parse.parse(tree.read("proc/mdstat"))
    try:
        plan = plan_preset(preset, host, md, None, budget)
    except PlanError as error:
        assert "would be above" in str(error)
        return
    for change in plan.changes:
        assert CATALOGUE[change.knob].validate(change.to_value) == change.to_value
        if change.knob == "group_thread_cnt":
            assert not syncing
    md2 = md.array("md2")
    assert md2 is not None
    current_cost = stripe_cache_mib(current_cache, member_disks(md2))
    assert plan.cost_mib <= max(plan.budget_mib, current_cost) + 1e-9


@pytest.fixture
def fuzzed_server(tmp_path_factory) -> Iterator[tuple[Server, KernelTree, dict[str, bytes]]]:
    root = tmp_path_factory.mktemp("schemathesis")
    tree = KernelTree(root / "kernel")
    syncing_box(tree)
    before = tree.snapshot()
    server = Server(
        ["serve"],
        env={
            "MDBOOST_PROC_ROOT": str(tree.proc),
            "MDBOOST_SYS_ROOT": str(tree.sys),
            "MDBOOST_DB": str(root / "data" / "mdboost.db"),
            "MDBOOST_API_TOKEN": TOKEN,
            "MDBOOST_MAX_CACHE_MB": "1024",
        },
        log=root / "server.log",
    ).start()
    yield server, tree, before
    server.stop()


def test_no_request_fails_the_server_or_writes_anything_but_valid_knobs(fuzzed_server):
    """Every operation in our own OpenAPI schema, with generated inputs: never a 5xx, and the
    only kernel files changed afterwards are catalogue knobs holding valid values.

    Driven through hypothesis directly: schemathesis' pytest plugin does not run on pytest 9.
    """
    server, tree, before = fuzzed_server
    api = schemathesis.openapi.from_url(f"{server.base}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @settings(
            max_examples=25,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def no_server_error(case: schemathesis.Case) -> None:
            response = case.call(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"
            )

        no_server_error()

    after = tree.snapshot()
    assert set(after) == set(before), "files appeared or vanished"
    host = Host(tree.proc, tree.sys)
    knob_paths = {}
    for knob in CATALOGUE.values():
        targets = {
            "global": [None],
            "array": ["md2", "md0"],
            "member": ["sda", "sdb", "sdc", "sdd"],
        }
        for target in targets[knob.scope]:
            path = host.knob_path(knob.path, target)
            knob_paths[str(path.relative_to(tree.root))] = knob
    for relative, content in after.items():
        if content == before[relative]:
            continue
        assert relative in knob_paths, f"{relative} changed but is not a catalogue knob"
        knob = knob_paths[relative]
        value = knob.normalise(content.decode())
        assert knob.validate(value) == value
    assert "Traceback" not in Path(server.log or "").read_text()
