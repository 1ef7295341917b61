"""The kernel language frontend: a restricted Python function becomes an ``ir.Kernel``.

:func:`parse_kernel` reads the function's source, checks it against the kernel
language and produces IR with every type resolved; :func:`kernel_signature` reads only
its parameters. Anything outside the language raises
:class:`~cubecl_server.errors.KernelSyntaxError` pointing at the file and line of the
offending construct, its traceback ending at that line (:func:`parse_kernel` drops
the frontend's frames), with the likeliest intended name for an undefined one.

The language and its full typing rules are documented in ``docs/language.md``.

The frontend's parts, from the walk down:

- :mod:`.visitor` - :class:`~.visitor.KernelBuilder`, the walk over the AST: each
  statement and expression goes to the function of its kind (the unpacking of tuples,
  :mod:`.tuples`, is mixed in);
- :mod:`.statements` (control flow, returns, calls for their effect) and
  :mod:`.assignments`;
- :mod:`.expressions`, with :mod:`.calls` (what a call means, by its callee);
- :mod:`.inlining` (``@cube_fn`` helpers), :mod:`.intrinsics` (the language's
  functions, a table by callee), :mod:`.mathcalls` and :mod:`.composed`;
- :mod:`.memory` (arrays, shared and local arrays, slices, indices) and
  :mod:`.operations` (operators and conversions, with the typing rules of
  :mod:`.typerules`);
- :mod:`.builder` - :class:`~.builder.Builder`, the function being built (the kernel or
  a helper): its names, locals and errors; every part takes it as ``b``;
- :mod:`.unit` (what one build collects) and :mod:`.weak` (weak-type inference: a
  local assigned only constants takes the type of what it meets, and where that
  changes a type code already built used, the kernel is built again).

A part imports only parts listed with it or below it, and :mod:`.tuples` and
:mod:`.composed` (which see the builder through the :class:`~.tuples.Building`
protocol): none imports the walk, which imports them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from typing import Any

from .. import ir
from ..errors import KernelSyntaxError
from .reads import Reads
from .signature import LINE_SIZE, KernelSignature, kernel_signature, spelled
from .source import KernelSource, load_source, raises_at_kernel_line
from .structs import read_fields
from .typerules import WeakLocals
from .uniformity import Divergence, Marker, UniformLoad, find_divergent, strip_markers
from .unit import Unit
from .visitor import KernelBuilder
from .weak import Retyped

__all__ = ["parse_kernel", "first_use", "kernel_signature", "KernelSignature"]


@raises_at_kernel_line
def parse_kernel(fn: Callable[..., Any], comptime: dict[str, object] | None = None, *,
                 source: KernelSource | None = None,
                 signature: KernelSignature | None = None,
                 reads: Reads | None = None) -> ir.Kernel:
    """Compile the kernel function ``fn``, specialised with ``comptime``, into IR.

    ``source`` and ``signature``, when given, are ``load_source(fn)`` and
    ``kernel_signature(fn, source)`` made earlier (a kernel parsed again for other
    comptime values need not read its file again). ``reads``, when given, is told
    every name resolved outside the kernel's own code (the IR cache's key).

    Raises KernelSyntaxError for anything outside the kernel language (its traceback
    ends at the kernel's line, with none of the frontend's frames) and TypeError for
    comptime values that do not match the signature.
    """
    return _build(fn, comptime, source, signature, reads)[0]


def first_use(fn: Callable[..., Any], comptime: dict[str, object] | None,
              test: Callable[[object], bool], *, source: KernelSource | None = None,
              signature: KernelSignature | None = None) -> ir.SourceLoc | None:
    """Where the kernel function ``fn`` (specialised with ``comptime``) first uses
    what ``test`` picks out of its IR nodes: the file and line of the first statement,
    in program order, holding such a node (a helper's statement at its own line), or
    None where none does. It builds the kernel again, so it is for error messages."""
    _, body, locs = _build(fn, comptime, source, signature, None)
    found = _first_stmt(body, test)
    if found is None or id(found) not in locs:
        return None
    return ir.SourceLoc(*locs[id(found)])


_BLOCKS = ("then", "orelse", "body")


def _first_stmt(body: tuple[object, ...], test: Callable[[object], bool]) -> object | None:
    """The first statement under ``body`` whose own parts (not its nested blocks) hold
    a node ``test`` picks, innermost first."""
    for st in body:
        own = tuple(getattr(st, f.name) for f in (fields(st) if is_dataclass(st) else ())
                    if f.name not in _BLOCKS)
        if test(st) or any(test(n) for n in ir.walk(own)):
            return st
        for name in _BLOCKS:
            inner = getattr(st, name, None)
            if isinstance(inner, tuple):
                found = _first_stmt(inner, test)
                if found is not None:
                    return found
    return None


def _build(fn: Callable[..., Any], comptime: dict[str, object] | None,
           source: KernelSource | None, signature: KernelSignature | None,
           reads: Reads | None) -> tuple[ir.Kernel, tuple[ir.Stmt, ...],
                                         dict[int, tuple[str, int]]]:
    """:func:`parse_kernel`'s work: the kernel, the body as built (its statements are
    the keys of the third item) and where each statement was written."""
    if source is None:
        source = load_source(fn)
    sig = signature if signature is not None else kernel_signature(fn, source)
    if sig.structs:
        members = {n: f for n, (_, f) in sig.structs.items()}
        src = source
        source = replace(source, tree=read_fields(
            source.tree, members, lambda node, message: KernelSyntaxError(
                message, src.file, src.line(node), function=fn.__name__)))
    bound = sig.bind_comptime(comptime or {})
    params = sig.specialise(dict(bound), sig.bind_line_sizes((comptime or {}).get(LINE_SIZE)))
    weak = WeakLocals()
    while True:
        unit = Unit(weak, reads)
        unit.has_lines = bool(sig.lines)
        try:
            builder = KernelBuilder(fn, source, params, dict(bound), unit)
            builder.structs = sig.structs
            body = builder.build()
        except Retyped:
            # A weak local got a type other than the one the code built so far gave it:
            # build again, knowing it from the start. Each time one more local has its
            # final type, so this ends.
            continue
        break
    if unit.typing.deferred:
        raise unit.typing.deferred[0]
    for d in find_divergent(body):
        raise _divergence_error(d, unit)
    kernel = ir.Kernel(
        name=fn.__name__,
        params=params,
        locals=tuple(unit.ir_locals),
        shared=tuple(unit.shared),
        body=strip_markers(body),
        comptime=spelled(bound),
        local_arrays=tuple(unit.local_arrays),
        loc=ir.SourceLoc(source.file, source.line(source.tree)),
    )
    return kernel, body, unit.locs


def _divergence_error(d: Divergence, unit: Unit) -> KernelSyntaxError:
    file, line = unit.locs.get(id(d.stmt), ("<unknown>", 0))
    cfile, cline = unit.locs.get(id(d.cause), ("<unknown>", 0))
    where = f"line {cline}" if cfile == file else f"{cfile}:{cline}"
    cause = {
        ir.If: f"the `if` condition on {where} depends on the unit",
        ir.While: f"the `while` condition on {where} depends on the unit",
        ir.For: f"the `for` bounds or step on {where} depend on the unit",
        ir.Return: f"the `return` on {where} is taken by some units only",
        ir.Break: f"the `break` on {where} is taken by some units only",
        ir.Continue: f"the `continue` on {where} is taken by some units only",
    }.get(type(d.cause), f"control flow on {where} depends on the unit")
    if isinstance(d.stmt, UniformLoad) and d.cause is d.stmt:
        return KernelSyntaxError("workgroup_uniform_load() reads an element chosen by the "
                                 "unit: its index must be the same for the whole cube (built "
                                 "from constants, scalar parameters and CUBE_* builtins)",
                                 file, line)
    if isinstance(d.stmt, Marker):
        what = f"shared array `{d.stmt.what}` is declared"
        fix = "declare it at the top of the kernel"
    elif isinstance(d.stmt, ir.TensorMapLoad):
        what = "tma_load() is reached"
        if d.cause is d.stmt:
            return KernelSyntaxError("tma_load() takes coordinates that depend on the unit: "
                                     "they must be the same for the whole cube (built from "
                                     "constants, scalar parameters and CUBE_* builtins)",
                                     file, line)
        fix = ("it holds barriers, which every unit of a cube must reach: move it out of "
               "the branch, or make the condition uniform")
    elif isinstance(d.stmt, UniformLoad):
        what = "workgroup_uniform_load() is reached"
        fix = ("it holds barriers, which every unit of a cube must reach: move it out of "
               "the branch, or make the condition uniform")
    else:
        what = "sync_cube() is reached"
        fix = ("every unit of a cube must reach the same barriers: move it out of the "
               "branch, or make the condition uniform (built from constants, scalar "
               "parameters and CUBE_* builtins)")
    return KernelSyntaxError(f"{what} under control flow that depends on the unit: "
                             f"{cause}; {fix}", file, line)
