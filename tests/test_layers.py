"""Folders are the layers (docs/architecture.md): no module imports from a layer above its own.

The layer map lives here, once. Every import counts, at module level, inside functions and under
``TYPE_CHECKING``: a type-only import upward is still a dependency a reader has to follow. One exception, by
name: a package's ``__main__`` module is the ``python -m raycomp.<package>`` entry point, so it belongs to the
command lines wherever its folder is, and may hold nothing but the call of its command (checked below).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "raycomp"

# Bottom to top. A module belongs to the layer of the longest prefix that names it.
LAYERS: list[tuple[str, ...]] = [
    ("raycomp.base", "raycomp.shipped"),  # shared facts; `shipped` is a user-visible class_path root
    ("raycomp.core",),  # the vocabulary: Event, State, Algorithm, Engine, passes, Trace
    ("raycomp.loop",),  # the Trainer and the model interface it drives (loop/model.py)
    ("raycomp.algorithms", "raycomp.functional"),  # methods, run by the loop's Engine at its events
    ("raycomp.data", "raycomp.models"),  # workloads: implement the model interface, register with surgeries
    ("raycomp.config",),  # the schema, the sweep spec and the recipe (config -> Trainer): data, nothing built
    ("raycomp.preflight",),  # the workload check: the user's model and data built and run once per command
    ("raycomp.results", "raycomp.find"),  # summaries, verdicts, results files; a find's decisions (pure, on verdicts)
    ("raycomp.tracking",),  # MLflow
    ("raycomp.report",),  # figures and the page
    ("raycomp.launch",),  # Ray
    # the command lines and the entry points that name them (`python -m raycomp.tune`, the package's facade);
    # every package's `__main__` (`python -m raycomp.report`, `raycomp.find`) belongs here too: see layer_of
    ("raycomp.cli", "raycomp.api", "raycomp.tune", "raycomp.train", "raycomp"),
]
COMMAND_LINES = len(LAYERS) - 1


def layer_of(module: str) -> int:
    if module.endswith(".__main__"):
        return COMMAND_LINES
    best, found = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, f"{module} is in no layer: add it to LAYERS"
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """The raycomp modules ``path`` imports (``from raycomp.x import y`` names ``raycomp.x.y`` when y is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("raycomp"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("raycomp") and not node.level:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / (candidate.replace(".", "/") + ".py")).is_file() or (
                    PACKAGE.parent / candidate.replace(".", "/")
                ).is_dir()
                found.add(candidate if is_module else node.module)
    return found


def test_no_module_imports_from_a_layer_above_its_own():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        own = layer_of(module)
        for target in sorted(imported_modules(path)):
            if layer_of(target) > own and target != "raycomp":
                upward.append(f"{module} (layer {own}) imports {target} (layer {layer_of(target)})")
            elif target == "raycomp" and module != "raycomp":
                upward.append(
                    f"{module} imports the package facade `raycomp`: import from the module that owns the name"
                )
    assert not upward, "\n".join(upward)


def test_the_python_api_and_the_command_lines_stand_side_by_side():
    """``raycomp.api`` and ``raycomp.cli`` share a layer, yet the API must not call a command line: both call the
    commands below them (``launch/sweep/command.py``, ``launch/find/command.py``; issue 56 item 4)."""
    assert not {name for name in imported_modules(PACKAGE / "api.py") if name.startswith("raycomp.cli")}
    launch = [path for path in (PACKAGE / "launch").rglob("*.py") if any(
        name.startswith("raycomp.cli") for name in imported_modules(path))]  # fmt: skip
    assert not launch


def test_main_modules_only_call_their_command():
    """A ``__main__`` sits in its package's folder but belongs to the command lines: it may import the standard
    library and ``raycomp.cli`` only, so nothing but the shim itself escapes its folder's layer."""
    shims = sorted(PACKAGE.rglob("__main__.py"))
    assert shims, "no __main__ shim found"
    for path in shims:
        imported = imported_modules(path)
        assert imported and all(name.startswith("raycomp.cli.") for name in imported), f"{path}: {imported}"


def test_every_module_is_in_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path))


def test_the_loop_algorithms_and_workloads_are_layers_in_design_md_s_order():
    """loop < algorithms < data/models: the Trainer knows no method and no workload, a method no workload."""
    assert layer_of("raycomp.loop.trainer") < layer_of("raycomp.algorithms.glu") < layer_of("raycomp.models.gpt")
    assert layer_of("raycomp.data.loaders") == layer_of("raycomp.models.gpt")
    assert layer_of("raycomp.functional") == layer_of("raycomp.algorithms")


def test_the_walker_sees_an_upward_import(tmp_path):
    """The check itself must fail on a violation: a core module importing the Trainer, in a function."""
    source = tmp_path / "raycomp" / "core" / "bad.py"
    source.parent.mkdir(parents=True)
    source.write_text("def f():\n    from raycomp.loop.trainer import Trainer\n")
    targets = {t for t in imported_modules(source) if t.startswith("raycomp.loop")}
    assert targets and all(layer_of(t) > layer_of("raycomp.core.bad") for t in targets)


@pytest.mark.spawns
def test_importing_the_core_loads_no_cli_loop_or_launch_module():
    check = (
        "import sys, raycomp.core\n"
        "print(sorted(m for m in sys.modules if m.startswith(('raycomp.cli', 'raycomp.loop', 'raycomp.launch'))))"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def run_time_imports(path: Path) -> set[str]:
    """The ``raycomp.config`` modules ``path`` imports when it runs (those under ``if TYPE_CHECKING:`` are hints)."""
    tree = ast.parse(path.read_text(), str(path))
    hints = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("raycomp.config."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("raycomp.config."))
    return found


def test_the_config_modules_import_each_other_in_no_circle():
    """Issue 56 item 1: eight config modules imported each other in a circle through the preflight, which built the
    model while a config loaded. The config is data now; the workload check is ``raycomp.preflight``."""
    graph = {module_name(path): run_time_imports(path) for path in (PACKAGE / "config").glob("*.py")}
    done: set[str] = set()

    def circle_from(module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if module in path:
            return (*path[path.index(module) :], module)
        if module in done:
            return None
        for target in sorted(graph.get(module, ())):
            if found := circle_from(target, (*path, module)):
                return found
        done.add(module)
        return None

    circles = [circle for module in sorted(graph) if (circle := circle_from(module, ()))]
    assert not circles, " -> ".join(circles[0])
