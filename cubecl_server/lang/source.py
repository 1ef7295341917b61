"""Reading a kernel's source: the function's AST with its real file line numbers; and
pointing a KernelSyntaxError's traceback at the kernel's line."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from ..errors import KernelSyntaxError

__all__ = ["KernelSource", "load_source", "quick_text", "code_location", "closure_vars",
           "body_of", "hide_frontend_frames", "raises_at_kernel_line"]


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


class _Here(Exception):
    """Raised and caught at once: its traceback is a frame at a line of a kernel."""


def hide_frontend_frames(exc: KernelSyntaxError) -> None:
    """Give ``exc`` a traceback of one frame, at the line of the kernel it is about, and
    no chained exception, as if the kernel's own line had raised it.

    The frontend's frames tell a kernel's author nothing; what does is their own call
    (the frames the error passes on its way up to it) and the kernel's line. A public
    entry point re-raises with a bare ``raise``, which adds no frame of its own::

        try:
            ...
        except KernelSyntaxError as exc:
            hide_frontend_frames(exc)
            raise
    """
    exc.__cause__ = None
    exc.__suppress_context__ = True
    if exc.line < 1:
        exc.with_traceback(None)
        return
    # A code object compiled under the kernel's file name, raising on the kernel's
    # line, makes a real frame there: tracebacks print the line from the file. The
    # raise spans two lines from the line's own indentation, so no carets are drawn
    # under a part of it.
    text = linecache.getline(exc.file, exc.line)
    indent = len(text) - len(text.lstrip())
    if indent and exc.line > 1:
        code = "\n" * (exc.line - 2) + "if 1:\n" + " " * indent + "raise (\n_Here)"
    else:
        code = "\n" * (exc.line - 1) + "raise (\n_Here)"
    compiled = compile(code, exc.file, "exec").replace(co_name=exc.function or "<kernel>")
    try:
        exec(compiled, {"_Here": _Here})
    except _Here as here:
        # The first frame is this function's; the second is the kernel's line.
        at = here.__traceback__.tb_next  # type: ignore[union-attr]
        assert at is not None
        exc.with_traceback(types.TracebackType(None, at.tb_frame, at.tb_lasti, at.tb_lineno))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def raises_at_kernel_line(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator for the public entries of the kernel language: a KernelSyntaxError
    leaving ``fn`` shows the kernel's line and its caller's frames, none of the
    frontend's (:func:`hide_frontend_frames`)."""
    @functools.wraps(fn)
    def entry(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except KernelSyntaxError as exc:
            hide_frontend_frames(exc)
            raise
    return entry


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


def _indent(line: str) -> int | None:
    """The width of ``line``'s indentation; None when it holds anything but spaces (tabs
    and form feeds count differently for the tokenizer)."""
    body = line.lstrip()
    lead = line[:len(line) - len(body)]
    return len(lead) if lead.strip(" ") == "" else None


def _quick_block(lines: list[str]) -> list[str] | None:
    """The definition at the top of ``lines``, ended by indentation: the lines up to the
    next statement indented no deeper than its ``def``, without trailing blank or
    comment lines. None where indentation alone cannot tell (tabs, a decorator or
    header this cannot follow); the caller then tokenizes, as ``inspect.getblock`` does.

    The caller parses what this returns and keeps it only if it is exactly one
    statement: a cut inside a bracket, string or continuation does not parse, and a
    statement starts no line at the ``def``'s indentation before the ``def`` ends, so
    a block that parses as one statement is the one ``inspect.getblock`` finds (up to
    trailing comments, which parse to nothing)."""
    if not lines:
        return None
    base = _indent(lines[0])
    if base is None:
        return None
    seen_def = False
    end = len(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        width = _indent(line)
        if width is None:
            return None
        if width > base:
            continue
        if not seen_def:
            if stripped.startswith(("def ", "async ")):
                seen_def = True
            elif not stripped.startswith("@"):
                return None
        elif not stripped.startswith(")"):
            # A `)` at the def's own indentation closes a multi-line signature.
            end = i
            break
    while end > 0 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return lines[:end] if seen_def else None


def _parse_one(text: str) -> ast.Module | None:
    """``text`` parsed, if it is exactly one statement."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    return module if len(module.body) == 1 else None


@raises_at_kernel_line
def load_source(fn: Callable[..., Any]) -> KernelSource:
    """Parse ``fn``'s definition from its file; raise KernelSyntaxError if impossible.

    The definition is what ``inspect.getsource`` returns; its end is found by
    indentation where that is unambiguous, which saves tokenizing it in Python.
    """
    file, first = code_location(fn)
    if not inspect.isfunction(fn):
        raise KernelSyntaxError(
            f"a kernel must be a Python function defined with `def`, not {fn!r}", file, first)
    try:
        # inspect.getsource is getblock(lines[start:]) of these.
        lines, start = inspect.findsource(inspect.unwrap(fn))
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"the source of `{fn.__name__}` is not available ({exc}); kernels are "
            "compiled from their source text, so they must be defined in a file, "
            "not in a REPL or with exec()", file, first, function=fn.__name__) from None
    # getsource starts at the first decorator line, which is co_firstlineno.
    offset = first - 1
    quick = _quick_block(lines[start:])
    module = None
    if quick is not None:
        text = textwrap.dedent("".join(quick))
        module = _parse_one(text)
    if module is None:
        module, text, offset = _parse_block("".join(inspect.getblock(lines[start:])),
                                            offset, fn, file, first)
    tree = module.body[0] if module.body else None
    if isinstance(tree, ast.AsyncFunctionDef):
        raise KernelSyntaxError("a kernel cannot be `async def`", file, tree.lineno + offset,
                                function=fn.__name__)
    if not isinstance(tree, ast.FunctionDef) or tree.name != fn.__name__:
        raise KernelSyntaxError(
            f"`{fn.__name__}` must be defined with a `def` statement of its own to be a "
            "kernel (lambdas and generated functions have no usable source)", file, first,
            function=fn.__name__)
    return KernelSource(tree=tree, file=file, offset=offset, text=text)


def quick_text(fn: Callable[..., Any], checked: bool = False) -> str | None:
    """``fn``'s definition as :func:`load_source` finds it by indentation, without
    parsing it: the text the IR cache keys a kernel or helper by. None when it cannot
    be read that way (no source, tabs, a header indentation cannot follow).

    ``checked``: also None unless the text parses as one statement, which is when
    :func:`load_source` parses this very text (otherwise it tokenizes the file).
    """
    try:
        lines, start = inspect.findsource(inspect.unwrap(fn))
    except (OSError, TypeError):
        return None
    quick = _quick_block(lines[start:])
    if quick is None:
        return None
    text = "".join(quick)
    if checked and _parse_one(textwrap.dedent(text)) is None:
        return None
    return text


def _parse_block(raw: str, offset: int, fn: Callable[..., Any], file: str,
                 first: int) -> tuple[ast.Module, str, int]:
    """Parse the definition ``raw`` as ``inspect.getsource`` returned it: the module, the
    text it was parsed from and the line offset of that text."""
    text = textwrap.dedent(raw)
    try:
        return ast.parse(text), text, offset
    except SyntaxError:
        pass
    # A multi-line string less indented than the def defeats dedent; parsing
    # the block under a dummy `if` keeps its indentation valid as it is.
    text = "if 1:\n" + raw
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise KernelSyntaxError(
            f"cannot parse the source of `{fn.__name__}`: {exc.msg}", file, first,
            function=fn.__name__) from None
    inner = module.body[0]
    assert isinstance(inner, ast.If)
    return ast.Module(body=inner.body, type_ignores=[]), text, offset - 1
