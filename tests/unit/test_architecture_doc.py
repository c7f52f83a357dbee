"""ARCHITECTURE.md's module map against the tree: a module added, moved or removed without
the map following fails here, so the map cannot drift."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "ARCHITECTURE.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _mapped() -> list[str]:
    return re.findall(r"^- `([\w/]+\.py)`: \S", _section("Module map"), flags=re.MULTILINE)


def _is_empty_package(path: Path) -> bool:
    """An ``__init__.py`` with nothing but a docstring (and the future import) holds no code
    to map."""
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and all(
        (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        for node in body
    )


def _modules() -> set[str]:
    package = ROOT / "gputui"
    return {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if not _is_empty_package(path)
    }


def test_the_module_map_lists_every_module_once_and_nothing_else() -> None:
    mapped = _mapped()
    assert len(mapped) == len(set(mapped)), "a module is mapped twice"
    assert len(mapped) > 100  # the pattern read the map
    missing, gone = _modules() - set(mapped), set(mapped) - _modules()
    assert not missing, f"modules not in ARCHITECTURE.md's map: {sorted(missing)}"
    assert not gone, f"mapped modules that do not exist: {sorted(gone)}"


def test_every_file_the_document_names_exists() -> None:
    files = [
        p.relative_to(ROOT).as_posix()
        for folder in ("gputui", "tests", "scripts", "benchmarks")
        for p in (ROOT / folder).rglob("*.py")
    ]
    named = set(re.findall(r"`([\w./]+\.py)", DOC.read_text()))
    assert named
    unknown = {n for n in named if not any(f == n or f.endswith("/" + n) for f in files)}
    assert not unknown, f"ARCHITECTURE.md names files that do not exist: {sorted(unknown)}"


def test_every_folder_of_the_package_is_a_layer_the_document_describes() -> None:
    layers = _section("The layers")
    folders = {
        p.name for p in (ROOT / "gputui").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    undescribed = {f for f in folders if f"`{f}/`" not in layers}
    assert not undescribed, undescribed
