"""How the package's modules import one another, beyond the layers import-linter holds: the
screen's modules form no circle (counting imports inside functions and for type checking
only), and no module of the screen imports the app."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "gputui"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every gputui module ``path`` imports, anywhere in it (a name imported from a package
    counts as its submodule where there is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gputui"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gputui"):
            module = node.module or ""
            found.add(module)
            for alias in node.names:
                sub = PACKAGE.parent / (module + "." + alias.name).replace(".", "/")
                if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists():
                    found.add(f"{module}.{alias.name}")
    return found


def _graph(folder: str) -> dict[str, set[str]]:
    paths = sorted((PACKAGE / folder).glob("*.py"))
    names = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p) & names for p in paths}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph``, as the modules along it; None where there is none."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_the_cycle_finder_finds_a_circle_and_only_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_circle_among_the_screens_modules() -> None:
    graph = _graph("ui")
    assert graph.get("gputui.ui.app")  # the walk saw the imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_module_of_the_screen_imports_the_app() -> None:
    importers = [name for name, targets in _graph("ui").items() if "gputui.ui.app" in targets]
    assert not importers


def _private_imports() -> set[str]:
    """'module: name' for every underscore name one gputui module imports from another."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gputui"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.add(f"{_module_name(path)}: {node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """A name another module needs is public: split at a seam, or name it so."""
    assert _private_imports() == set()
