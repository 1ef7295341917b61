"""Reading a kernel's source: the function's AST with its real file line numbers."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import KernelSyntaxError

__all__ = ["KernelSource", "load_source", "code_location", "closure_vars", "body_of"]


@dataclass(frozen=True)
class KernelSource:
    """A kernel function's parsed definition.

    ``offset`` turns a line of ``tree`` into a line of ``file``; ``text`` is the
    (dedented) text ``tree`` was parsed from, for quoting constructs in messages.
    """

    tree: ast.FunctionDef
    file: str
    offset: int
    text: str

    def line(self, node: ast.AST) -> int:
        """The line in ``file`` where ``node`` starts."""
        return int(getattr(node, "lineno", 1)) + self.offset

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node`` as the user wrote it."""
        seg = ast.get_source_segment(self.text, node)
        return seg if seg is not None else ast.unparse(node)


def code_location(fn: Callable[..., Any]) -> tuple[str, int]:
    """The file and first line of ``fn``'s code, for errors raised without its source."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return "<unknown>", 0
    return code.co_filename, code.co_firstlineno


def closure_vars(fn: Callable[..., Any]) -> dict[str, object]:
    """The values of ``fn``'s closure variables; a cell not yet filled is left out."""
    out: dict[str, object] = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def body_of(tree: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of a function's definition, without its docstring."""
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def load_source(fn: Callable[..., Any]) -> KernelSource:
    """Parse ``fn``'s definition from its file; raise KernelSyntaxError if impossible."""
    file, first = code_location(fn)
    if not inspect.isfunction(fn):
        raise KernelSyntaxError(
            f"a kernel must be a Python function defined with `def`, not {fn!r}", file, first)
    try:
        raw = inspect.getsource(fn)
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"the source of `{fn.__name__}` is not available ({exc}); kernels are "
            "compiled from their source text, so they must be defined in a file, "
            "not in a REPL or with exec()", file, first) from None
    # getsource starts at the first decorator line, which is co_firstlineno.
    offset = first - 1
    text = textwrap.dedent(raw)
    try:
        module = ast.parse(text)
    except SyntaxError:
        # A multi-line string less indented than the def defeats dedent; parsing
        # the block under a dummy `if` keeps its indentation valid as it is.
        text = "if 1:\n" + raw
        offset -= 1
        try:
            module = ast.parse(text)
        except SyntaxError as exc:
            raise KernelSyntaxError(
                f"cannot parse the source of `{fn.__name__}`: {exc.msg}", file, first
            ) from None
        inner = module.body[0]
        assert isinstance(inner, ast.If)
        module = ast.Module(body=inner.body, type_ignores=[])
    tree = module.body[0] if module.body else None
    if isinstance(tree, ast.AsyncFunctionDef):
        raise KernelSyntaxError("a kernel cannot be `async def`", file, tree.lineno + offset)
    if not isinstance(tree, ast.FunctionDef) or tree.name != fn.__name__:
        raise KernelSyntaxError(
            f"`{fn.__name__}` must be defined with a `def` statement of its own to be a "
            "kernel (lambdas and generated functions have no usable source)", file, first)
    return KernelSource(tree=tree, file=file, offset=offset, text=text)
