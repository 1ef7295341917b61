"""docs/language.md says where every name comes from, and every import it shows works.

Each ``from X import a, b`` and ``import X`` in the page's Python examples and inline
code is imported here, so a name that moves or is renamed fails a test instead of a
reader; the table "Where names come from" must cover the whole public surface, with
one import path per name.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "language.md"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
_INLINE = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
_FROM = re.compile(r"\bfrom\s+([\w.]+)\s+import\s+(\([^)]*\)|[\w ,]+)")
_IMPORT = re.compile(r"(?:^|[`;]|\n)\s*import\s+([\w.]+)")
_DOTTED = re.compile(r"\bcubecl_server(?:\.\w+)+")


def _code(text: str) -> list[str]:
    """The Python blocks and the inline code spans of ``text``."""
    pieces = [m.group(2) for m in _FENCE.finditer(text) if m.group(1) == "python"]
    prose = _FENCE.sub("", text)
    pieces += [m.group(1) for m in _INLINE.finditer(prose)]
    return pieces


def _imports(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(module, name) for every ``from module import name``; every ``import module``."""
    names: list[tuple[str, str]] = []
    modules: list[str] = []
    for piece in _code(text):
        for m in _FROM.finditer(piece):
            for name in m.group(2).strip("()").replace("\n", " ").split(","):
                name = name.split("#")[0].strip()
                if name:
                    names.append((m.group(1), name.split(" as ")[0].strip()))
        modules += [m.group(1) for m in _IMPORT.finditer(piece)]
    return names, modules


def _table() -> str:
    text = PAGE.read_text()
    start = text.index("## Where names come from")
    return text[start:text.index("\n## ", start + 1)]


def _resolve(module: str, name: str) -> object:
    mod = importlib.import_module(module)
    if hasattr(mod, name):
        return getattr(mod, name)
    return importlib.import_module(f"{module}.{name}")  # a submodule


def _resolve_dotted(path: str) -> object:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_every_import_on_the_page_resolves() -> None:
    names, modules = _imports(PAGE.read_text())
    assert names and modules
    failures = []
    for module in sorted(set(modules)):
        try:
            importlib.import_module(module)
        except ImportError as e:
            failures.append(f"import {module}: {e}")
    for module, name in sorted(set(names)):
        try:
            _resolve(module, name)
        except (ImportError, AttributeError) as e:
            failures.append(f"from {module} import {name}: {e}")
    assert not failures, "\n".join(failures)


def test_every_name_has_one_import_path() -> None:
    names, _ = _imports(PAGE.read_text())
    paths: dict[str, set[str]] = {}
    for module, name in names:
        paths.setdefault(name, set()).add(module)
    assert {n: p for n, p in paths.items() if len(p) > 1} == {}


def test_dotted_names_in_the_table_resolve() -> None:
    dotted = {m.group(0) for piece in _code(_table()) for m in _DOTTED.finditer(piece)}
    assert "cubecl_server.client" in dotted and "cubecl_server.ExecutionMode" in dotted
    for path in sorted(dotted):
        _resolve_dotted(path)


def _table_names() -> dict[str, set[str]]:
    names, _ = _imports(_table())
    by_module: dict[str, set[str]] = {}
    for module, name in names:
        by_module.setdefault(module, set()).add(name)
    return by_module


def test_the_table_lists_the_whole_kernel_language() -> None:
    lang = importlib.import_module("cubecl_server.lang")
    assert _table_names()["cubecl_server.lang"] == set(lang.__all__)


def test_the_table_lists_every_error_where_it_is_exported() -> None:
    package: ModuleType = importlib.import_module("cubecl_server")
    errors = importlib.import_module("cubecl_server.errors")
    table = _table_names()
    exported = {n for n, m in package._EXPORTS.items() if m == "cubecl_server.errors"}
    assert table["cubecl_server"] == exported
    assert table["cubecl_server.errors"] == set(errors.__all__) - exported


@pytest.mark.parametrize("name", ["client", "ComputeClient", "ExecutionMode"])
def test_the_table_names_the_rest_of_the_package(name: str) -> None:
    assert name in importlib.import_module("cubecl_server").__all__
    assert re.search(rf"\b{name}\b", _table()), name


def test_the_typing_rules_live_in_the_docs() -> None:
    from cubecl_server.lang import frontend

    assert "docs/language.md" in (frontend.__doc__ or "")
    assert "Typing rules" not in (frontend.__doc__ or "")
    text = PAGE.read_text()
    for heading in ("### Typing rules", "### Locals of constants take the type they meet",
                    "## Timing and preparing kernels"):
        assert heading in text, heading
