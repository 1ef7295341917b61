"""Every Python example of docs/language.md runs, in page order, on the cpu backend.

The examples share one namespace, as a reader's session would (``client`` is a cpu
client, and each block sees the names the blocks before it made). A block of kernel
statements (no ``def``, using kernel names) is compiled as the body of a kernel whose
parameters :data:`FRAGMENTS` gives; a host fragment gets the values :data:`HOST`
gives. Every ``@kernel`` a block defines is built to IR (with :data:`COMPTIME`'s
values), and one the page shows being refused must raise ``KernelSyntaxError``.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cubecl_server.lang as lang
from cubecl_server.client import create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang.function import KernelFunction

PAGE = Path(__file__).parents[2] / "docs" / "language.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)

FRAGMENTS = {
    "old = atomic_add(hist, bin, 1)": "hist: Array[i32], best: Array[i32], c: Array[i32], "
                                      "bin: u32, score: i32",
    "tile = shared(u32, 64)": "counts: Array[u32]",
    "s = plane_sum(v)": "total: Array[f32], v: f32",
}
"""Kernel-statement blocks, by their first line: the parameters of their kernel."""

HOST = {
    "t = client.view(buf, (cols, rows), (1, cols))":
        "rows, cols = 3, 5\nbuf = client.create(np.arange(15, dtype=np.float32))\n"
        "out = client.empty(15, np.float32)\n"
        "count, dim = CubeCount(1, 1), CubeDim(8, 8)\n",
    'T = TypeRef("T")': "hx = client.create(np.ones(256, np.float32))\n"
                        "hy = client.empty(256, np.float32)\n",
}
"""Host fragments, by their first line: the code that makes the names they use."""

COMPTIME: dict[str, dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]] = {
    "tree_sum": {"block": 64}, "tiled": {"tile": 4}, "byte_histogram": {"K": 4},
    "poly": {"DEGREE": 3, "T": lang.f32},
    "apply": lambda scope: {"OP": scope["Op"].SCALE},
}
"""The comptime values each example kernel is built with (from the examples' names,
for a value a block defines)."""


def _blocks() -> list[tuple[int, str]]:
    """The page's Python blocks: (line, code)."""
    text = PAGE.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(2)) for m in _FENCE.finditer(text)
            if m.group(1) == "python"]


def _known(table: dict[str, str], code: str) -> str | None:
    """The key of ``table`` that ``code``'s first line starts with, or None."""
    first = code.splitlines()[0]
    return next((k for k in table if first.startswith(k)), None)


def _as_module(line: int, code: str) -> str:
    """``code`` as module source, a kernel-statement fragment wrapped in a kernel."""
    fragment, host = _known(FRAGMENTS, code), _known(HOST, code)
    if fragment is not None:
        return (f"@kernel\ndef fragment_{line}({FRAGMENTS[fragment]}) -> None:\n"
                f"{textwrap.indent(code, '    ')}\n")
    return (HOST[host] if host is not None else "") + code


def test_every_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks()
    assert len(blocks) > 15, "the page lost its examples"
    # A module of its own, as a reader's script is: a dataclass (a @struct) looks its
    # module up.
    module = types.ModuleType("language_examples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    scope: dict[str, Any] = module.__dict__
    scope.update({name: getattr(lang, name) for name in lang.__all__})
    client = create_client("cpu")
    scope.update(np=np, client=client)
    used = set()
    for line, code in blocks:
        used |= {_known(FRAGMENTS, code), _known(HOST, code)}
        # A file of its own: the frontend reads a kernel's source from where it is.
        path = tmp_path / f"example_{line}.py"
        path.write_text(_as_module(line, code))
        before = {k: v for k, v in scope.items() if isinstance(v, KernelFunction)}
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(path.read_text(), str(path), "exec"), scope)
        for name, k in scope.items():
            if not isinstance(k, KernelFunction) or before.get(name) is k:
                continue
            values = COMPTIME.get(name, {})
            if callable(values):
                values = values(scope)
            if "# KernelSyntaxError:" in code:
                with pytest.raises(KernelSyntaxError):
                    k.ir(**values)
            else:
                k.ir(**values)
    assert set(FRAGMENTS) | set(HOST) <= used, "a fragment this test knows left the page"
