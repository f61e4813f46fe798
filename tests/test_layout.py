"""The layout, kept: no import cycle between the packages of app/,
thin routers that import no other router, and docs/ARCHITECTURE.md, whose Layers section names
every part of app/. import-linter (pyproject.toml, run by scripts/test.sh) checks the layers' order."""

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import PROJECT_ROOT

APP = PROJECT_ROOT / "app"
ROUTES = APP / "web" / "routes"
MODULES = sorted(APP.rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(PROJECT_ROOT).as_posix()


def imported_modules(path: Path, module: str = "") -> set[str]:
    """Every module (and module.name) that `path` imports; `module`, its dotted name, resolves
    relative imports."""
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def package_of(module: str) -> str | None:
    """app.live.sampler -> app.live; app.cli -> app.cli (a top-level module is its own unit)."""
    parts = module.split(".")
    if parts[0] != "app" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def package_graph(app: Path = APP) -> dict[str, set[str]]:
    """Which package of app/ imports which other, from every import statement in the code
    (those under TYPE_CHECKING and inside functions count too: a cycle is a cycle)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(app.rglob("*.py")):
        module = ".".join(path.relative_to(app.parent).with_suffix("").parts)
        source = package_of(module)
        assert source is not None
        targets = graph.setdefault(source, set())
        for name in imported_modules(path, module):
            target = package_of(name)
            if target is not None and target != source:
                targets.add(target)
    return graph


def a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle between packages, as the path that closes it, or None (depth-first)."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            if found := visit(target, [*path, node]):
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        if found := visit(start, []):
            return found
    return None


def test_no_import_cycle_between_the_packages_of_app() -> None:
    cycle = a_cycle(package_graph())
    assert cycle is None, "packages import each other in a cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    """The check above can fail: two packages that import each other, and a longer ring."""
    for package, imports in {
        "kernel": "from app.live import tick",
        "live": "from app.tuning.planning.knob_plan import KnobPlan",
        "tuning": "import app.kernel.host",
        "store": "from . import db",
    }.items():
        (tmp_path / "app" / package).mkdir(parents=True)
        (tmp_path / "app" / package / "__init__.py").write_text("")
        (tmp_path / "app" / package / "mod.py").write_text(imports + "\n")
    (tmp_path / "app" / "__init__.py").write_text("")
    graph = package_graph(tmp_path / "app")
    assert graph["app.store"] == set()
    assert a_cycle(graph) == ["app.kernel", "app.live", "app.tuning", "app.kernel"]
    assert a_cycle({"app.a": {"app.b"}, "app.b": set()}) is None


@pytest.mark.parametrize("router", sorted(ROUTES.glob("*.py")), ids=relative)
def test_no_router_imports_another_router(router: Path) -> None:
    others = {f"app.web.routes.{p.stem}" for p in ROUTES.glob("*.py")} - {
        f"app.web.routes.{router.stem}",
        "app.web.routes.__init__",
    }
    assert not imported_modules(router) & others


def development_layout() -> str:
    architecture = (PROJECT_ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = architecture.split("## Layers", 1)[1]
    return section.split("```", 2)[1]


def test_the_readme_layout_names_every_subpackage_and_module() -> None:
    layout = development_layout()
    subpackages = sorted(p.parent for p in APP.glob("*/__init__.py"))
    assert subpackages, "no subpackage found"
    for package in subpackages:
        assert f"app/{package.name}/" in layout, f"ARCHITECTURE layout lacks app/{package.name}/"
        for module in sorted(package.rglob("*.py")):
            if module.name == "__init__.py":
                if module.parent != package:
                    assert f"{module.parent.name}/" in layout, (
                        f"ARCHITECTURE layout lacks {relative(module.parent)}/"
                    )
                continue
            assert re.search(rf"\b{re.escape(module.stem)}\b", layout), (
                f"ARCHITECTURE layout lacks {relative(module)}"
            )
    for module in sorted(APP.glob("*.py")):
        if module.name != "__init__.py":
            assert module.name in layout, f"ARCHITECTURE layout lacks {relative(module)}"


def test_every_module_the_readme_layout_names_exists() -> None:
    """A name belongs to the package its block opens (app/tuning/) or, after an indented
    "planning/", to that subpackage until another one or the next package starts."""
    package = sub = APP
    for line in development_layout().splitlines():
        if match := re.match(r"app/(\w+)/\s", line):
            package = sub = APP / match[1]
        elif line.startswith("app/"):
            package = sub = APP
        elif not line.startswith(" "):
            continue  # migrations/, tests/: not app/
        elif match := re.match(r"\s+(\w+)/\s", line):
            sub = package / match[1]
            assert (sub / "__init__.py").exists(), f"ARCHITECTURE layout names {relative(sub)}/"
        for name in re.findall(r"\b(\w+\.py)\b", line):
            assert any((where / name).exists() for where in (sub, package, APP)), (
                f"ARCHITECTURE layout names {name}, which is not in {relative(sub)}"
            )


def test_the_wheel_lists_every_subpackage() -> None:
    """pyproject.toml names the packages one by one: a new subpackage left out would be missing
    from a plain install (tests/test_wheel.py finds it too, slowly)."""
    listed = set(
        tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
            "packages"
        ]
    )
    for init in APP.rglob("__init__.py"):
        package = ".".join(init.parent.relative_to(PROJECT_ROOT).parts)
        assert package in listed, f"pyproject.toml [tool.setuptools] packages lacks {package}"


def test_app_state_is_reached_only_through_deps() -> None:
    """Routes and helpers get the app's state from app/web/deps.py's typed getters;
    only main.py, which builds the app, writes it."""
    readers = [
        relative(path)
        for path in MODULES
        if "app.state" in path.read_text()
        and relative(path) not in {"app/web/deps.py", "app/main.py"}
    ]
    assert readers == []


def test_routes_return_the_models_their_builders_made() -> None:
    """Each API shape is written once, as a model in app/shapes/ (or beside its
    builder) that the builder constructs; a route that re-validates a dict the builder made
    (`Model.model_validate(builder(...))`) writes the shape a second time, as dict keys."""
    revalidating = [
        relative(path)
        for path in sorted(ROUTES.glob("*.py"))
        if ".model_validate(" in path.read_text()
    ]
    assert revalidating == []


def classes_defined_twice(app: Path = APP) -> dict[str, list[str]]:
    """Each type name (a class, or a CamelCase alias such as `Sample = tuple[...]`) a module
    under `app` defines at its top level more than once, with the modules that define it."""
    where: dict[str, list[str]] = {}
    for path in sorted(app.rglob("*.py")):
        for name in _type_names(ast.parse(path.read_text())):
            where.setdefault(name, []).append(path.relative_to(app.parent).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def _type_names(module: ast.Module) -> Iterator[str]:
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            yield node.name
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id[0].isupper() and not target.id.isupper():
                yield target.id  # CamelCase: a type alias, not a CONSTANT


def test_no_class_name_is_defined_twice() -> None:
    """Names that say one thing each: a name defined twice (a domain type and its API
    shape, or two planners' `Plan`) makes a reader, a grep and /docs guess which one is meant.
    An API shape that mirrors a domain type is the type's name plus `Body` (PlanBody)."""
    assert classes_defined_twice() == {}


def test_the_name_check_finds_a_name_defined_twice(tmp_path: Path) -> None:
    """The check above can fail: the same class in two packages, or an alias named like a class
    elsewhere; a nested class and a CONSTANT are not counted."""
    for package, source in {
        "planner": "class Plan:\n    class Step:\n        pass\n\n\nLIMIT = 1\n",
        "tuning": "class Plan:\n    pass\n\n\nclass Step:\n    pass\n\n\nLIMIT = 2\n",
        "forecast": "Sample = tuple[float, int]\n",
        "shapes": "class Sample:\n    pass\n",
    }.items():
        (tmp_path / "app" / package).mkdir(parents=True)
        (tmp_path / "app" / package / "mod.py").write_text(source)
    assert classes_defined_twice(tmp_path / "app") == {
        "Plan": ["app/planner/mod.py", "app/tuning/mod.py"],
        "Sample": ["app/forecast/mod.py", "app/shapes/mod.py"],
    }


# Only app/store speaks SQL: above it a run, a session or a schedule is a record, never a row.
STORE = APP / "store"
SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE)\b"
)
CURSOR_CALLS = {"execute", "executemany", "executescript", "fetchone", "fetchall", "fetchmany"}
ROW_NAMES = re.compile(r"^(r|row|rows|\w+_row)$")
# Modules that still hold SQL or rows while the records move into the store, family by family.
NOT_YET_MOVED: set[str] = set()


def store_names(tree: ast.AST) -> set[str]:
    """The names `tree` binds to app/store: its modules (history in `from app.store import
    history`) and the functions imported from them."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("app.store"):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(
                alias.asname
                for alias in node.names
                if alias.name.startswith("app.store.") and alias.asname
            )
    return names


def from_the_store(tree: ast.AST) -> set[str]:
    """The names `tree` binds to what the store returns: `run = history.run(...)`,
    `for e in history.events(...)` (a comprehension's too), and on through names bound to those."""
    store = store_names(tree)

    def returned(value: ast.AST, held: set[str]) -> bool:
        if isinstance(value, ast.Name):
            return value.id in held
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id in store
        return isinstance(func, ast.Name) and func.id in store

    held: set[str] = set()
    while True:
        bound = set(held)
        for node in ast.walk(tree):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(target, node.value) for target in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.For | ast.comprehension):
                pairs = [(node.target, node.iter)]
            for target, value in pairs:
                if isinstance(target, ast.Name) and returned(value, held):
                    bound.add(target.id)
        if bound == held:
            return held
        held = bound


def sql_and_rows(source: str) -> list[str]:
    """What in `source` speaks SQL: an import of sqlite3, a SQL string, a cursor call, a
    lookup in a row by column name (row["id"], session_row["preset"]), or by a key in anything
    the store returned (e["ts"] of `for e in history.events(...)`: the store returns records)."""
    found: list[str] = []
    tree = ast.parse(source)
    stored = from_the_store(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            found += [f"{line}: imports sqlite3" for name in names if name == "sqlite3"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if SQL.search(node.value):
                found.append(f"{line}: SQL {node.value.strip()[:50]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in CURSOR_CALLS:
                found.append(f"{line}: .{node.func.attr}()")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            value = node.value
            name = value.id if isinstance(value, ast.Name) else getattr(value, "attr", "")
            looked_up = ROW_NAMES.match(name) or (isinstance(value, ast.Name) and name in stored)
            if isinstance(node.slice.value, str) and looked_up:
                found.append(f"{line}: {name}[{node.slice.value!r}]")
    return found


ABOVE_THE_STORE = [p for p in MODULES if not p.is_relative_to(STORE)]


@pytest.mark.parametrize("module", ABOVE_THE_STORE, ids=relative)
def test_only_the_store_speaks_sql(module: Path) -> None:
    if relative(module) in NOT_YET_MOVED:
        pytest.skip("its records have not moved into app/store yet")
    assert sql_and_rows(module.read_text()) == []


def test_the_sql_check_finds_sql_and_rows() -> None:
    """The check above can fail: each way of speaking SQL is found, and plain code is not."""
    source = '''
import sqlite3
from sqlite3 import Row
conn.execute("SELECT id FROM runs WHERE array = ?", (name,))
query = f"UPDATE schedules SET removed = {now}"
"""DELETE FROM auth_sessions"""
cursor.fetchone()
print(row["preset"], session_row["id"], rows["x"])
from app.store import effects, history
from app.store.history import events
elsewhere = effects.latest_measured(conn, "boost")
print(elsewhere["ratio"], [e["ts"] for e in history.events(conn, 1)])
for e in events(conn, 1):
    first = e
print(first["kind"])
'''
    found = sql_and_rows(source)
    lines = " ".join(sorted(f.split(": ", 1)[0] for f in found))
    assert lines == "12 12 15 2 3 4 4 5 6 7 8 8 8", found
    plain = (
        'card["sync"]\nlabel = "Select the time; update it later"\nmatch["name"]\n'
        "from app.store import history\nrun = history.run(conn, 1)\nprint(run.id, totals['x'])\n"
    )
    assert sql_and_rows(plain) == []


# What a function of the store may not return: a row, a cursor or a mapping keyed by column.
UNTYPED = re.compile(r"\b(Any|Row|Cursor|Mapping)\b|\bdict\[str, object\]")


def untyped_returns(source: str) -> list[str]:
    """Each public function of `source` whose return is not a record (or a plain value)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            returns = ast.unparse(node.returns) if node.returns else "unannotated"
            if UNTYPED.search(returns) or node.returns is None:
                found.append(f"{node.name} -> {returns}")
    return found


@pytest.mark.parametrize("module", sorted(STORE.glob("*.py")), ids=relative)
def test_the_store_returns_records(module: Path) -> None:
    assert untyped_returns(module.read_text()) == []


def test_the_return_check_finds_rows_and_mappings() -> None:
    source = """
def runs(conn) -> list[dict[str, Any]]: ...
def run(conn) -> sqlite3.Row | None: ...
def cursor(conn) -> Iterator[tuple[Any, ...]]: ...
def anything(conn): ...
def _row(row: sqlite3.Row) -> dict[str, Any]: ...
def run_record(conn) -> Run | None: ...
def ratios(conn) -> dict[str, float]: ...
"""
    found = [f.split(" -> ")[0] for f in untyped_returns(source)]
    assert found == ["runs", "run", "cursor", "anything"]


def test_nothing_still_waits_to_move() -> None:
    """Each module the list above names still speaks SQL: one that no longer does leaves it."""
    moved = [m for m in sorted(NOT_YET_MOVED) if not sql_and_rows((PROJECT_ROOT / m).read_text())]
    assert moved == []


# Comments say why the code is as it is now. This project's tracker and its design notes are not in
# the repository, so a reader of the code has neither: the history belongs in commits and docs/.
# An upstream project's public issue, linked by its address (".../issues/1234"), is fine.
HISTORY = re.compile(r"\bissues? #?\d+|\bDESIGN\.md\b|\bSTYLE\.md\b", re.IGNORECASE)
SHIPPED = ("app", "templates", "migrations", "static")
SHIPPED_SUFFIXES = (".py", ".html", ".sql", ".js", ".css", ".toml")


def history_citations(root: Path, parts: tuple[str, ...] = SHIPPED) -> list[str]:
    """Every line under `root`'s `parts` that cites a tracker issue by number, DESIGN.md or
    STYLE.md, as "path:line: text"; vendored files are not ours."""
    found = []
    for part in parts:
        for path in sorted((root / part).rglob("*")):
            if path.suffix not in SHIPPED_SUFFIXES or "vendor" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if HISTORY.search(line):
                    where = path.relative_to(root).as_posix()
                    found.append(f"{where}:{number}: {line.strip()}")
    return found


def test_no_comment_cites_a_tracker_issue_or_a_file_outside_the_repository() -> None:
    assert history_citations(PROJECT_ROOT) == []


def test_the_history_check_finds_issue_numbers_and_design_notes(tmp_path: Path) -> None:
    files = {
        "app/a.py": "LIMIT = 1  # issue 30: batch f missed it\n",
        "templates/_b.html": "{# Shape: see DESIGN.md #}\n",
        "migrations/0001_c.sql": "-- Issue 13: a cascading revoke\n",
        "static/app.js": "/* the page reads fine without it (STYLE.md habit 12) */\n",
        "static/vendor/htmx.js": "// issue 1: not ours\n",
        "app/d.py": "# uvicorn's https://github.com/encode/uvicorn/issues/1234: why\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert [line.split(":")[0] for line in history_citations(tmp_path)] == [
        "app/a.py",
        "templates/_b.html",
        "migrations/0001_c.sql",
        "static/app.js",
    ]


# A fact of the kernel judged once a tick has one caller of its rule: the tick (the sampler's
# readings); before a tick exists (a plan, a revert at start-up) the kernel is read for it.
JUDGED_ONCE_A_TICK = {
    "is_failed": {"app/live/tick.py", "app/live/array_view.py"},
    "effective_limits": {"app/live/tick.py"},
}


def callers_of(name: str, root: Path = APP) -> set[str]:
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            called = node.func if isinstance(node, ast.Call) else None
            named = getattr(called, "id", None) or getattr(called, "attr", None)
            if named == name:
                found.add(str(path.relative_to(root.parent)))
    return found


@pytest.mark.parametrize("rule", sorted(JUDGED_ONCE_A_TICK))
def test_a_fact_judged_once_a_tick_has_its_rule_called_by_the_tick_alone(rule: str) -> None:
    assert callers_of(rule) == JUDGED_ONCE_A_TICK[rule]


def test_the_caller_check_finds_a_second_caller(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text("x = failure.is_failed(array, None)\n")
    (tmp_path / "app" / "b.py").write_text("def is_failed():\n    return is_failed()\n")
    assert callers_of("is_failed", tmp_path / "app") == {"app/a.py", "app/b.py"}
