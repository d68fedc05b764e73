"""The package's rooms and the rules between them, checked on the source (docs/architecture.md explains them).

1. A room imports only from rooms at its own level or below: data flows corpus → index → retrieval → answer → engine → front ends.
2. No import cycles between modules, counting imports made inside functions.
3. The front ends (serving, evaluation, the CLI, the UI) use the engine's public API, not its internals.
4. Nothing inside the package imports the package root, whose lazy exports are for users.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LEVELS = {
    "assistant.infra": 0, "assistant.errors": 0, "assistant.settings": 0,
    "assistant.text": 1,
    "assistant.ingest": 2,
    "assistant.models": 3, "assistant.chat": 3,
    "assistant.indexing": 4,
    "assistant.retrieval": 5,
    "assistant.answer": 6, "assistant.options": 6,
    "assistant.engine": 7,
    "assistant.serve": 8, "assistant.evaluation": 8,
    "ui": 9,
    "assistant.cli": 10,
}
FRONT_ENDS = ("assistant.serve", "assistant.evaluation", "assistant.cli", "ui")
PUBLIC_API = (
    "assistant.engine", "assistant.options", "assistant.settings", "assistant.errors", "assistant.answer.result", "assistant.answer.table",
    "assistant.ingest", "assistant.indexing.indexer", "assistant.infra",
)


def _room(module: str) -> str:
    return next(room for room in sorted(LEVELS, key=len, reverse=True) if module == room or module.startswith(room + "."))


def _modules() -> dict[str, Path]:
    found = {}
    for path in [*ROOT.joinpath("assistant").rglob("*.py"), *ROOT.joinpath("ui").rglob("*.py")]:
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports anywhere in its file (`from a import b` counts a.b when b is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known and name != module}


MODULES = _modules()
GRAPH = {module: _imports(module, path, set(MODULES)) for module, path in MODULES.items()}
INNER = {module: deps for module, deps in GRAPH.items() if module not in ("assistant",)}


def test_every_module_has_a_room() -> None:
    assert [module for module in INNER if not any(module == r or module.startswith(r + ".") for r in LEVELS)] == []


@pytest.mark.parametrize("module", sorted(INNER))
def test_imports_run_down_the_layers(module: str) -> None:
    level = LEVELS[_room(module)]
    upward = [dep for dep in INNER[module] if dep != "assistant" and LEVELS[_room(dep)] > level]
    assert upward == [], f"{module} (level {level}) imports higher rooms"


def test_no_module_imports_the_package_root() -> None:
    assert [module for module, deps in INNER.items() if "assistant" in deps] == []


def test_front_ends_use_the_public_api() -> None:
    reaching_in = {
        module: sorted(dep for dep in deps if not dep.startswith(FRONT_ENDS) and not dep.startswith(PUBLIC_API))
        for module, deps in INNER.items() if module.startswith(FRONT_ENDS)
    }
    assert {module: deps for module, deps in reaching_in.items() if deps} == {}


def test_no_import_cycles() -> None:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(GRAPH[module]):
            if dep in ("assistant",) or dep not in GRAPH:
                continue
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []
