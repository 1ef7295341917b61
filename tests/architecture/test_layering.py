"""The core's imports run one way: no cycle between modules, no import of a higher layer;
and within each plugin and example package, no cycle either.

The import graph of ``cubecl_server`` is read from the source (every import counts:
module-level ones, those deferred into functions and those under
``TYPE_CHECKING``). Modules named only as strings (entry points, the root package's
lazy names, the registry's built-in plugins) are not edges. The layers are those of
``docs/architecture.md`` ("Parts and layers"), lowest first; a module may import
its own layer and those below it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "cubecl_server"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("leaves", ("cubecl_server", "errors", "ir", "ir_check", "id", "logging", "execution",
                "config", "device", "driver", "kernel", "storage", "allocator", "server",
                "validation", "timestamp_profiler", "throughput", "benchmark", "command",
                "device_events", "tma", "bounded", "progress")),
    ("persistence", ("persistence",)),
    ("compiler", ("compiler", "lowering", "launched")),
    ("plugins", ("plugins",)),
    ("runtime", ("runtime", "memory_management", "metadata_cache", "stream", "arrays",
                 "client", "tune")),
    ("backend surface", ("backend",)),
    ("language", ("lang",)),
    ("applications", ("backends", "conformance", "cli", "demo")),
]
"""Each layer's name and its modules, relative to ``cubecl_server`` (a package stands
for all of its modules; ``cubecl_server`` alone is the root package)."""


PLUGINS = {path.name: path for pattern in ("plugins/*/cubecl_*", "examples/*/cubecl_*")
           for path in sorted(ROOT.glob(pattern)) if (path / "__init__.py").exists()}
"""Every plugin and example package of the repository, by name (their imports of
their own modules must form no cycle either)."""


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _graph(modules: dict[str, Path], root: str = "cubecl_server"
           ) -> dict[str, dict[str, int]]:
    """For each module, the modules of the package ``root`` it imports, with a line of
    each."""
    def known(name: str) -> str:
        # `from a.b import c` imports a.b.c when c is a module, else a name of a.b.
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                if target == root or target.startswith(f"{root}."):
                    imported = known(target)
                    if imported != name:
                        edges.setdefault(imported, node.lineno)
        graph[name] = edges
    return graph


def _layer(module: str) -> int:
    """The index in LAYERS of the layer ``module`` belongs to; -1 for none."""
    relative = module.removeprefix("cubecl_server").removeprefix(".") or "cubecl_server"
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if relative == member or relative.startswith(f"{member}."):
                return index
    return -1


def test_every_module_has_a_layer() -> None:
    missing = sorted(m for m in _modules() if _layer(m) < 0)
    assert not missing, ("modules in no layer (add each to LAYERS here and to "
                         f"docs/architecture.md): {', '.join(missing)}")


def test_no_module_imports_a_higher_layer() -> None:
    modules = _modules()
    bad = []
    for name, edges in sorted(_graph(modules).items()):
        for imported, line in sorted(edges.items()):
            if _layer(imported) > _layer(name):
                bad.append(f"{modules[name].relative_to(ROOT)}:{line}: {name} "
                           f"({LAYERS[_layer(name)][0]}) imports {imported} "
                           f"({LAYERS[_layer(imported)][0]})")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", ["cubecl_server", *PLUGINS])
def test_no_import_cycle(package: str) -> None:
    graph = _graph(_modules(PLUGINS.get(package, PACKAGE)), package)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for imported in sorted(graph[name]):
            if state.get(imported) == 1:
                cycles.append([*path[path.index(imported):], imported])
            elif imported not in state:
                visit(imported)
        path.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    described = [" -> ".join(f"{m} (line {graph[m][n]})" if n else m
                             for m, n in zip(cycle, [*cycle[1:], None], strict=True))
                 for cycle in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_the_architecture_doc_states_these_layers() -> None:
    """docs/architecture.md's table of layers is LAYERS, row by row."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Parts and layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| layer")]
    documented = []
    for name, cell in rows:
        modules = [m for m in re.findall(r"`([^`]+)`", cell) if m != "__version__"]
        if "the package itself" in cell:
            modules.insert(0, "cubecl_server")
        documented.append((name.strip(), tuple(modules)))
    assert documented == LAYERS
