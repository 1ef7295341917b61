"""The core's public surfaces: backends import it only through ``cubecl_server.backend``,
and each user-facing name has one import path.

Every module of the plugins' packages, of the example backend and of the built-in
cpu backend is parsed (imports inside functions and ``TYPE_CHECKING`` blocks count
as much as the others); an import of the core must name ``cubecl_server.backend``,
``cubecl_server.ir``, ``cubecl_server.conformance`` (for a backend's conformance
hooks) or the importing backend's own package.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cubecl_server.backend import _tiers

ROOT = Path(__file__).parents[2]

ALLOWED = ("cubecl_server.backend", "cubecl_server.ir", "cubecl_server.conformance")
"""The modules of the core a backend may import (and their submodules)."""


def _backend_modules() -> dict[str, tuple[Path, str]]:
    """Each backend module by its path in the repository, with its file and the
    import name of the backend package it belongs to."""
    packages = {p: p.name for p in [*ROOT.glob("plugins/*/cubecl_*"),
                                    *ROOT.glob("examples/*/cubecl_*")]}
    packages[ROOT / "cubecl_server" / "backends" / "cpu"] = "cubecl_server.backends.cpu"
    return {str(path.relative_to(ROOT)): (path, own)
            for package, own in packages.items() for path in sorted(package.rglob("*.py"))}


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports by absolute name, with its line (``from a import
    b`` counts as ``a.b``: b may be a submodule). Relative imports stay in the
    importing package and are left out."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
    return out


def _violations(path: Path, own: str) -> list[str]:
    """The imports of the core in ``path`` that do not go through the public surface."""
    def allowed(name: str) -> bool:
        private = name.startswith("cubecl_server.backend._")  # the tiers' machinery
        return not private and any(name == a or name.startswith(f"{a}.")
                                   for a in (*ALLOWED, own))

    return [f"{path.relative_to(ROOT)}:{line} imports {name}"
            for line, name in _imported(path)
            if (name == "cubecl_server" or name.startswith("cubecl_server."))
            and not allowed(name)]


def test_the_backends_are_all_found() -> None:
    modules = _backend_modules()
    for expected in ("cubecl_server/backends/cpu/plugin.py",
                     "plugins/cubecl-opencl/cubecl_opencl/plugin.py",
                     "plugins/cubecl-vulkan/cubecl_vulkan/plugin.py",
                     "plugins/cubecl-cuda/cubecl_cuda/plugin.py",
                     "examples/cubecl-example/cubecl_example/plugin.py"):
        assert expected in modules


def test_backends_import_the_core_only_through_the_public_surface() -> None:
    bad = [v for path, own in _backend_modules().values() for v in _violations(path, own)]
    assert not bad, ("backends must import the core through the tiers of "
                     "cubecl_server.backend and cubecl_server.ir only (add what they need "
                     "to a tier in cubecl_server/backend/_tiers.py):"
                     "\n" + "\n".join(bad))


# ----------------------------------------------------- one import path per name


def _top_level_modules() -> list[str]:
    """Every module and package directly under ``cubecl_server``."""
    package = ROOT / "cubecl_server"
    return sorted(f"cubecl_server.{p.stem if p.is_file() else p.name}"
                  for p in package.iterdir()
                  if (p.suffix == ".py" and p.stem != "__init__")
                  or (p / "__init__.py").is_file())


def test_client_is_callable_whatever_was_imported_first() -> None:
    """``cubecl_server.client`` is the client module and, called, the shared client:
    importing any module first (``cubecl_server.runtime`` once made it a module that
    could not be called) changes neither."""
    # One fresh interpreter imports the package alone, then forks a child per module,
    # all at once: each child starts from that state (what a program's first import
    # leaves), and the interpreter's start-up is paid once rather than once per module.
    script = textwrap.dedent("""
        import importlib, os, sys
        import cubecl_server
        children = {}
        for name in sys.argv[1:]:
            pid = os.fork()
            if pid == 0:
                try:
                    importlib.import_module(name)
                    c = cubecl_server.client("cpu")
                    from cubecl_server import client
                    assert client is sys.modules["cubecl_server.client"]
                    assert isinstance(c, client.ComputeClient) and client("cpu") is c
                except BaseException as e:
                    print(f"{name}: {type(e).__name__}: {e}", flush=True)
                    os._exit(1)
                os._exit(0)
            children[pid] = name
        failed = [children[pid] for pid in children if os.waitpid(pid, 0)[1] != 0]
        sys.exit(f"failed: {failed}" if failed else 0)
    """)
    modules = _top_level_modules()
    assert "cubecl_server.runtime" in modules and len(modules) > 10
    proc = subprocess.run([sys.executable, "-c", script, *modules],
                          env={**os.environ, "CUBECL_PLUGINS": ""}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and not proc.stdout, (
        f"cubecl_server.client() failed after importing:\n{proc.stdout}{proc.stderr}")


def test_no_public_name_is_also_another_submodule() -> None:
    import cubecl_server

    for name in cubecl_server.__all__:
        if (ROOT / "cubecl_server" / f"{name}.py").is_file():
            value = getattr(cubecl_server, name)
            assert value is importlib.import_module(f"cubecl_server.{name}"), name


def test_kernel_has_one_import_path() -> None:
    import cubecl_server.kernel
    import cubecl_server.lang

    assert callable(cubecl_server.lang.kernel)
    assert not hasattr(cubecl_server.kernel, "kernel")
    assert "kernel" not in cubecl_server.kernel.__all__


# ----------------------------------------------------- the backend surface, lazily


def _type_checking_imports(path: Path) -> dict[str, str]:
    """The names ``path`` imports under ``if TYPE_CHECKING:``, with their modules."""
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.unparse(imp)
                out.update((a.name, imp.module) for a in imp.names)
    return out


def _tier_path(tier: str) -> Path:
    """The source file of the tier module ``tier``."""
    parts = tier.split(".")
    return ROOT.joinpath(*parts, "__init__.py") if tier == "cubecl_server.backend" else (
        ROOT.joinpath(*parts).with_suffix(".py"))


def test_each_tier_resolves_each_name_to_its_own_object() -> None:
    """Every name a tier exports is the very object of the module it lives in, and the
    imports type checkers read and the tier's literal ``__all__`` say the same as the
    table it is loaded from."""
    for tier in _tiers.TIERS:
        surface = importlib.import_module(tier)
        homes = _type_checking_imports(_tier_path(tier))
        assert homes == _tiers.homes(tier), tier
        assert surface.__all__ == _tiers.exports(tier), tier
        assert sorted(homes) == dir(surface), tier
        for name, module in homes.items():
            assert getattr(surface, name) is getattr(importlib.import_module(module),
                                                     name), name
    with pytest.raises(AttributeError, match="NotAName"):
        importlib.import_module("cubecl_server.backend").NotAName  # noqa: B018


def test_each_name_has_one_tier_and_the_first_tier_is_small() -> None:
    everywhere = [n for tier in _tiers.TIERS for n in _tiers.exports(tier)]
    assert len(everywhere) == len(set(everywhere)), sorted(
        n for n in everywhere if everywhere.count(n) > 1)
    assert len(_tiers.exports("cubecl_server.backend")) <= 20
    # A name asked of the wrong tier says which tier has it.
    with pytest.raises(AttributeError, match=r"cubecl_server\.backend\.lowering"):
        importlib.import_module("cubecl_server.backend").Native  # noqa: B018


def test_the_guide_lists_the_tiers_as_the_table_says() -> None:
    """``docs/writing-a-backend.md`` holds the table the tiers are generated from, word
    for word: a name moved between tiers moves in the guide too."""
    guide = (ROOT / "docs" / "writing-a-backend.md").read_text()
    assert _tiers.guide_table() in guide, (
        "the tier table of docs/writing-a-backend.md (section 2) is stale; replace it with "
        "the output of: python -c 'from cubecl_server.backend import _tiers; "
        "print(_tiers.guide_table())'")


def test_the_example_backend_imports_only_the_first_tier() -> None:
    package = ROOT / "examples" / "cubecl-example" / "cubecl_example"
    core = [(p.name, name) for p in package.rglob("*.py") for _, name in _imported(p)
            if name.startswith("cubecl_server.") and not name.startswith("cubecl_server.ir")
            and not name.startswith("cubecl_server.conformance")]
    assert core and all(name.rsplit(".", 1)[0] == "cubecl_server.backend"
                        for _, name in core), core


def test_registering_a_backend_imports_no_compile_path() -> None:
    """What a plugin module imports at discovery loads the descriptor and the hook
    marker, not the compiler, the lowering, the store or the client."""
    script = textwrap.dedent("""
        import json, sys
        from cubecl_server.backend import BackendDescriptor, BackendUnavailable, hookimpl
        print(json.dumps(sorted(sys.modules)))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[:2] in (
        ["cubecl_server", "compiler"], ["cubecl_server", "lowering"],
        ["cubecl_server", "persistence"], ["cubecl_server", "client"],
        ["cubecl_server", "runtime"])]
    assert not heavy, heavy
    assert "cubecl_server.plugins.descriptor" in loaded


def test_the_guide_gives_the_whole_capabilities_signature() -> None:
    """Every field of ``Capabilities``, in order, with its default, as the guide's
    ``Capabilities(...)`` block writes it."""
    import dataclasses
    import re

    from cubecl_server.device import Capabilities

    parts = []
    for f in dataclasses.fields(Capabilities):
        if f.default is not dataclasses.MISSING:
            parts.append(f"{f.name}={f.default!r}")
        elif f.default_factory is not dataclasses.MISSING:
            parts.append(f"{f.name}={f.default_factory()!r}")
        else:
            parts.append(f.name)
    guide = (ROOT / "docs" / "writing-a-backend.md").read_text()
    found = re.search(r"```python\nCapabilities\((.*?)\)\n```", guide, re.S)
    assert found, "the guide has no ```python Capabilities(...)``` block"
    assert re.sub(r"\s+", " ", found.group(1)) == ", ".join(parts)
