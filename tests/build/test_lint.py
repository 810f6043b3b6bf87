"""The code stays clean: ruff (lint and format), mypy --strict, the size of its parts, and
imports that go one way."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for folder in ("firmware", "sim") for p in sorted((ROOT / folder).rglob("*.py"))]
MAX_FUNCTION_LINES, MAX_CLASS_LINES = 60, 300  # complexity: ruff's C901, at most 20
MAX_MODULE_LINES = 400  # past that a module is doing two jobs (cli.py, link.py were)


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]])
def test_ruff(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    """`mypy` reads its settings (strict, firmware/, sim/ and the image's Python) from
    pyproject.toml."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_is_too_long() -> None:
    lines = {p.relative_to(ROOT): len(p.read_text().splitlines()) for p in SOURCES}
    assert {p: n for p, n in lines.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_or_class_is_too_long() -> None:
    too_long = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    too_long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert too_long == []


def _modules() -> dict[str, Path]:
    """Every module of firmware/ and sim/ by its import name."""
    found = {}
    for path in SOURCES:
        parts = list(path.relative_to(ROOT).with_suffix("").parts[1:])
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project's modules `name` imports, anywhere in it (type-only imports too: a
    circle drawn only for the type checker is still a circle in the design)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            named.update(
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            )
    imported = set()
    for target in named:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            imported.add(target)
    return imported


def test_no_import_circle_in_firmware_or_sim() -> None:
    """Each module's imports go one way: a circle (the core's modes reaching back into the
    unit, once) makes every module in it depend on all the others."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    circles = []
    for start in graph:  # a path from a module's imports back to the module
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                circles.append(start)
                break
            if name not in seen:
                seen.add(name)
                todo += graph[name]
    assert circles == [], f"modules on an import circle: {', '.join(sorted(circles))}"


# firmware/cityunit's rooms, from the bottom up: a module imports only from its own room and
# those below it (and the package's __version__), so the tower reads one way. The config's
# files and the header's facts sit just above the core: every room reads them.
ROOMS = (
    ("the core", ("cityunit.core",)),
    ("the config", ("cityunit.config", "cityunit.keys", "cityunit.files", "cityunit.header")),
    ("the display", ("cityunit.display",)),
    ("the parts", ("cityunit.parts",)),
    ("the loop", ("cityunit.loop",)),
    ("the console", ("cityunit.console",)),
    ("the page", ("cityunit.web",)),
    ("the composition root", ("cityunit.board",)),
    ("the service", ("cityunit.service",)),
    ("the tools", ("cityunit.tools",)),
    ("the command line", ("cityunit.cli", "cityunit.__main__")),
)
# The core is plain Python: these are all the standard library it may use (no I/O, no
# threads, no clock: time comes in as an argument).
PURE = {"__future__", "bisect", "collections", "enum", "functools", "heapq", "itertools",
        "operator", "random", "typing"}  # fmt: skip


def room(module: str) -> int | None:
    """Where `module` stands in ROOMS (None: the package itself, or not the firmware's)."""
    for floor, (_, prefixes) in enumerate(ROOMS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return floor
    return None


def test_every_firmware_module_is_in_a_room() -> None:
    homeless = [m for m in _modules() if m.startswith("cityunit.") and room(m) is None]
    assert homeless == [], f"modules in no room of ROOMS: {homeless}"


def test_no_import_runs_back_up_the_rooms() -> None:
    """The core imports nothing outside itself; the display nothing of the loop's; no
    room anything of a room above it; and the firmware nothing of the simulator's."""
    modules = _modules()
    upward = []
    for name, path in modules.items():
        if not name.startswith("cityunit.") or (floor := room(name)) is None:
            continue
        for target in _imports(name, path, modules):
            there = room(target)
            if target.startswith("cityunit_sim") or (there is not None and there > floor):
                upward.append(f"{name} ({ROOMS[floor][0]}) imports {target}")
    assert upward == []


def test_the_core_uses_only_pure_standard_modules() -> None:
    found = set()
    for name, path in _modules().items():
        if room(name) == 0:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    found.add(node.module.split(".")[0])
    assert found - PURE - {"cityunit"} == set()


def test_the_units_records_are_values_not_dataclasses() -> None:
    """A frozen dataclass compiles its methods at import: 3.5 M instructions a class, where
    a `Value` or a config `Section` costs 0.06 M (35 M of READY's 457 went that way). Only
    the tools, which no unit imports, may use them."""
    users = [
        name
        for name, path in _modules().items()
        if name.startswith("cityunit.") and not name.startswith("cityunit.tools")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and "dataclasses" in [getattr(node, "module", None), *(a.name for a in node.names)]
    ]
    assert users == []


def test_the_command_line_imports_nothing_heavy_before_its_command_runs() -> None:
    """`cityunit run` catches its signals before gpiozero, luma and Pillow load (a Pi Zero
    takes one to two seconds over them): the command line and the programs' modules must
    not import them at their top."""
    code = (
        "import sys, cityunit.cli, cityunit.service.run, cityunit.tools.commands, cityunit_sim.launch\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('gpiozero', 'luma', 'PIL', 'pygame', 'serial') or m == 'cityunit.board')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr


DOCUMENTED = 0.83  # luma.core's share, measured the same way (gpiozero's: 0.69)


def public_definitions() -> dict[str, bool]:
    """Every public class, function, method and property of the firmware and the
    simulator: whether it has a docstring, its own or the one it overrides (as help() and
    Sphinx show it)."""
    import importlib
    import inspect
    import pkgutil

    import cityunit
    import cityunit_sim

    found: dict[str, bool] = {}
    for package in (cityunit, cityunit_sim):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                    continue
                if inspect.isfunction(obj) or inspect.isclass(obj):
                    found[f"{module.__name__}.{name}"] = inspect.getdoc(obj) is not None
                if not inspect.isclass(obj):
                    continue
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(member, property) or inspect.isfunction(
                        getattr(member, "__func__", member)
                    ):
                        doc = inspect.getdoc(
                            member if isinstance(member, property) else getattr(obj, attr)
                        )
                        found[f"{module.__name__}.{name}.{attr}"] = doc is not None
    return found


def test_public_definitions_are_documented_as_completely_as_luma() -> None:
    found = public_definitions()
    share = sum(found.values()) / len(found)
    bare = sorted(name for name, documented in found.items() if not documented)
    assert share >= DOCUMENTED, f"{share:.0%} documented; bare: {', '.join(bare)}"


def test_every_test_is_in_a_room() -> None:
    """docs/testing.md's rule: a test goes in the lowest room that can prove it. Only the
    shared helpers stay at tests/'s top."""
    tests = ROOT / "tests"
    rooms = {"core", "parts", "system", "build", "hil", "vm", "image"}
    top = {p.name for p in tests.glob("*.py")}
    assert top == {"conftest.py", "fakes.py", "goldens.py", "differential.py"}
    homeless = [str(p.relative_to(tests)) for p in tests.rglob("test_*.py")
                if p.relative_to(tests).parts[0] not in rooms]  # fmt: skip
    assert homeless == []
    documented = (ROOT / "docs/testing.md").read_text()
    assert all(f"`tests/{room}/`" in documented for room in rooms)


def test_a_mode_asked_for_by_a_wrong_name_or_option_is_a_type_error(tmp_path: Path) -> None:
    """Modes are reached by name (Context.to): a checker still catches a misspelled mode
    and an option that mode does not take."""
    code = tmp_path / "handover.py"
    code.write_text(
        "from cityunit.core.modes.base import Context\n\n\n"
        "def f(unit: Context) -> None:\n"
        '    unit.to("idle", sold=True)\n'
        '    unit.to("off", timed=False)\n'
        '    unit.to("auction", sold=True)\n'
        '    unit.to("idel")\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(code)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["7", "8"], result.stdout
