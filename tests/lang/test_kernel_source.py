"""Tests of reading a kernel's source: the definition found by indentation must be the
one ``inspect.getsource`` finds, however the function is laid out."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang.source import load_source

LAYOUTS = '''\
import functools

from cubecl_server.lang import kernel
from cubecl_server.lang import ABSOLUTE_POS, Array, f32


def deco(*args, **kwargs):
    return lambda fn: fn


@kernel
def plain(x: Array[f32], out: Array[f32]) -> None:
    """Doc."""
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]
    # a trailing comment at the body's indentation

# a comment at column 0 before the next definition
@kernel
def long_signature(
    x: Array[f32],
    out: Array[f32],
) -> None:
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * (1.0 +
2.0)


@kernel
def split_signature(
    x: Array[f32],
    out: Array[f32],
) -> None:
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]
def after_split(): pass


@deco(
    "arguments",
    over="lines",
)
@kernel
def decorated(x: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
# a comment less indented than the body
    out[i] = x[i]
def after_decorated(): pass


def one_liner(x: Array[f32], out: Array[f32]) -> None: out[0] = x[0]
def next_one_liner(): pass


def low_string(x: Array[f32], out: Array[f32]) -> None:
    s = """a string
less indented than the def"""
    out[0] = x[0]


def backslash(x: Array[f32], out: Array[f32]) -> None:
    out[0] = x[0] + \\
x[1]


def make_nested():
    @kernel
    def nested(x: Array[f32], out: Array[f32]) -> None:
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]
    return nested


nested = make_nested()


class Holder:
    @staticmethod
    def method(x: Array[f32], out: Array[f32]) -> None:
        out[0] = x[0]

        # a comment after a blank line


method = Holder.method


async def asynchronous(x: Array[f32]) -> None:
    x[0] = 1.0
'''

NAMES = ["plain", "long_signature", "split_signature", "decorated", "one_liner",
         "low_string", "backslash", "nested", "method", "asynchronous"]


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("layouts") / "kernel_layouts.py"
    path.write_text(LAYOUTS)
    spec = importlib.util.spec_from_file_location("cubecl_test_kernel_layouts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def reference(fn: Callable[..., Any]) -> tuple[ast.AST, int]:
    """The definition and line offset from ``inspect.getsource``, tokenized."""
    raw = inspect.getsource(fn)
    offset = fn.__code__.co_firstlineno - 1
    try:
        tree = ast.parse(textwrap.dedent(raw)).body[0]
    except SyntaxError:
        tree = ast.parse("if 1:\n" + raw).body[0]
        assert isinstance(tree, ast.If)
        tree, offset = tree.body[0], offset - 1
    return tree, offset


def raw_fn(obj: Any) -> Callable[..., Any]:
    return getattr(obj, "fn", obj)


@pytest.mark.parametrize("name", NAMES)
def test_definition_is_the_one_getsource_finds(layouts: Any, name: str) -> None:
    fn = raw_fn(getattr(layouts, name))
    want, offset = reference(fn)
    if name == "asynchronous":
        with pytest.raises(KernelSyntaxError, match="async def"):
            load_source(fn)
        return
    got = load_source(fn)
    assert ast.dump(got.tree, include_attributes=True) == ast.dump(
        want, include_attributes=True)
    assert got.offset == offset
    lines = Path(fn.__code__.co_filename).read_text().splitlines()
    assert lines[got.line(got.tree) - 1].lstrip().startswith(f"def {name}(")
    for node in ast.walk(got.tree):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef):
            # Every statement's line is its line in the file, and it quotes as written.
            assert got.segment(node).splitlines()[0].strip() in lines[got.line(node) - 1]


def test_kernel_reads_its_source_once(layouts: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from cubecl_server.lang import function

    calls: list[str] = []
    real = function.load_source

    def counting(fn: Callable[..., Any]) -> Any:
        calls.append(fn.__name__)
        return real(fn)

    monkeypatch.setattr(function, "load_source", counting)
    k = layouts.make_nested()
    k.kernel_id({})
    assert k.signature.params[0].name == "x"
    k.kernel_id({})
    assert calls == ["nested"]
