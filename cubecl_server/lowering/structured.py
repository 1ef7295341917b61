"""The skeleton every backend's emitter shares: the passes run first, then naming,
temporaries, nesting, dispatch over the core IR's node types, and the helper
functions a program collects.

An emitter receives the kernel in the core IR (:mod:`cubecl_server.lowering.passes`,
for the target its :class:`~cubecl_server.lowering.passes.Native` describes), so it
writes each node as its target spells it and decides nothing the IR means.
A backend's emitter subclasses :class:`StructuredEmitter` and writes one method per
node type, which :meth:`~StructuredEmitter.stmt` and :meth:`~StructuredEmitter.expr`
dispatch to: ``stmt_assign``, ``stmt_store``, ``stmt_if``, ``stmt_for``,
``stmt_while``, ``stmt_break``, ``stmt_continue``, ``stmt_return``, ``stmt_barrier``,
``stmt_sync_plane``, ``stmt_atomic`` for the statements, and ``expr_const``, ``expr_var``,
``expr_builtin``, ``expr_binary``, ``expr_unary``, ``expr_math``, ``expr_cast``,
``expr_bitcast``, ``expr_select``, ``expr_load``, ``expr_metadata`` (``Len``,
``BufferLen``, ``Rank``, ``Shape`` and ``Stride``: :func:`metadata_kind` names each),
``expr_plane``, ``expr_line_fill``, ``expr_line_element``, ``expr_line_make`` for the
expressions (each returns the expression's text).
:class:`~cubecl_server.lowering.cfamily.CEmitter` is one, for C-like languages; the
cpu backend's NumPy emitter is another, the vulkan backend's SPIR-V emitter a third
(its expression methods give SPIR-V ids instead of text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes import Native, lower

__all__ = ["Metadata", "StructuredEmitter", "mangle", "metadata_kind"]

_STMTS: dict[type, str] = {
    ir.Assign: "stmt_assign", ir.Store: "stmt_store", ir.If: "stmt_if", ir.For: "stmt_for",
    ir.While: "stmt_while", ir.Break: "stmt_break", ir.Continue: "stmt_continue",
    ir.Return: "stmt_return", ir.Barrier: "stmt_barrier", ir.AtomicStmt: "stmt_atomic",
    ir.SyncPlane: "stmt_sync_plane",
    ir.TensorMapLoad: "stmt_tensor_map_load", ir.DebugPrint: "stmt_debug_print",
}
_EXPRS: dict[type, str] = {
    ir.Const: "expr_const", ir.Var: "expr_var", ir.Builtin: "expr_builtin",
    ir.Binary: "expr_binary", ir.Unary: "expr_unary", ir.Math: "expr_math",
    ir.Cast: "expr_cast", ir.Bitcast: "expr_bitcast", ir.Select: "expr_select",
    ir.Load: "expr_load",
    ir.Len: "expr_metadata", ir.Shape: "expr_metadata", ir.Stride: "expr_metadata",
    ir.BufferLen: "expr_metadata", ir.Rank: "expr_metadata",
    ir.PlaneOp: "expr_plane", ir.LineFill: "expr_line_fill",
    ir.LineElement: "expr_line_element", ir.LineMake: "expr_line_make",
}
_JUMPS = (ir.Return, ir.Break, ir.Continue)

Metadata = ir.Len | ir.BufferLen | ir.Rank | ir.Shape | ir.Stride
"""The expressions a launch passes per array parameter besides its buffer."""

_KIND = {ir.Len: "len", ir.BufferLen: "buffer_len", ir.Rank: "rank", ir.Shape: "shape",
         ir.Stride: "stride"}


def metadata_kind(e: Metadata) -> str:
    """What a launch passes for ``e``, as :class:`~cubecl_server.lowering.info.InfoEntry`
    names it: ``len`` (the logical length), ``buffer_len`` (the buffer's elements,
    checked mode's bound), ``rank``, ``shape`` or ``stride``."""
    return _KIND[type(e)]


def mangle(name: str) -> str:
    """The one spelling of a user's name inside generated code: ASCII letters and digits,
    each run of anything else one ``_``, none at either end (never empty).

    Generated code puts a role prefix before it (``p_``, ``l_``, ``s_``...), so no
    mangled name is a keyword, a builtin, a reserved ``gl_``/``__`` name or a helper
    of any target language, C-like or Python.
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "x"


class StructuredEmitter:
    """The part of lowering one kernel that is the same in every target language.

    It names things (:attr:`stems`: each parameter, local, shared and local array gets a
    mangled stem unique in the program; :meth:`temp` makes temporaries), writes lines
    at the current nesting (:meth:`line`, :meth:`nested`), dispatches statements and
    expressions to the subclass (:meth:`block`, :meth:`stmt`, :meth:`expr`; a block
    stops at its first jump, the rest being unreachable), collects helper functions
    (:meth:`helper`: each defined once, in the order first needed, after the helpers
    it needs) and the target features the program needs (:meth:`need`).
    """

    comment = "//"
    """What starts a line comment in the target language."""

    indent = "    "
    """One level of nesting."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
                 backend: str, native: Native) -> None:
        self.kernel = lower(kernel, cube_dim, mode, native, backend)
        """The kernel in the core IR: what this emitter writes."""
        kernel = self.kernel
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.mode = mode
        self.backend = backend
        self.ident = mangle(kernel.name)
        """The kernel's name as an identifier (entry points are named from it)."""
        self.lines: list[str] = []
        self.depth = 0
        self.helpers: dict[str, str] = {}
        self.needs: set[str] = set()
        self.arrays = {p.name: p for p in kernel.params if p.array}
        self.scalars = {p.name: p for p in kernel.params if not p.array and not p.tensor_map}
        self.tensor_maps = {p.name: p for p in kernel.params if p.tensor_map}
        self.locals = {loc.name: loc for loc in kernel.locals}
        self.shared = {sh.name: sh for sh in kernel.shared}
        self.local_arrays = {la.name: la for la in kernel.local_arrays}
        self._taken: set[str] = set()
        self._temps = 0
        self.stems = {d.name: self.unique(mangle(d.name))
                      for d in (*kernel.params, *kernel.locals, *kernel.shared,
                                *kernel.local_arrays)}
        if self.tensor_maps and not self.takes_tensor_maps():
            p = next(iter(self.tensor_maps.values()))
            self.fail(f"parameter {p.name!r} is a TensorMap[{p.elem.value}], and the "
                      f"{backend} backend has no tensor memory accelerator: tensor maps need "
                      "the `tma` capability (Capabilities.tma: CUDA on sm_90 and later)")

    def stmt_debug_print(self, s: ir.DebugPrint) -> None:
        """Refuse a print: a target that prints overrides this (and its device has
        ``Capabilities.debug_print``, without which a launch refuses the kernel)."""
        self.fail(f"the {self.backend} backend cannot print from a kernel "
                  "(Capabilities.debug_print is False): remove the debug_print")

    def takes_tensor_maps(self) -> bool:
        """Whether this target lowers tensor-map parameters and their loads (a target
        that does overrides this and ``stmt_tensor_map_load``)."""
        return False

    # ------------------------------------------------------------ names

    def unique(self, base: str) -> str:
        """``base``, or ``base_2``, ``base_3``... : the first not yet taken (then taken)."""
        out, i = base, 1
        while out in self._taken:
            i += 1
            out = f"{base}_{i}"
        self._taken.add(out)
        return out

    def temp(self) -> str:
        """A fresh temporary's name (``t1``, ``t2``...: no stem has that shape)."""
        self._temps += 1
        return f"t{self._temps}"

    def title(self) -> str:
        """One line saying what the generated program is."""
        x, y, z = self.dim
        return (f"Kernel {self.kernel.name!r} lowered by cubecl-{self.backend} "
                f"({self.mode.value}, cube dim {x}x{y}x{z}).")

    @property
    def atomic_arrays(self) -> frozenset[str]:
        """The arrays (parameters and shared) an atomic of the core IR acts on: what a
        target whose atomics need an atomic type (WGSL's ``array<atomic<u32>>``) declares
        so, and whose plain loads and stores it then writes as atomic ones."""
        return frozenset(s.array for s in ir.walk(self.kernel.body)
                         if isinstance(s, ir.AtomicStmt))

    @property
    def shared_bytes(self) -> int:
        """Bytes of cube-local memory the kernel's shared arrays take (bool: one each)."""
        return sum(sh.size * (sh.elem.bits // 8) for sh in self.kernel.shared)

    # ------------------------------------------------------------ output

    def line(self, text: str, note: str = "") -> None:
        """Append ``text`` at the current depth, with ``note`` as a trailing comment."""
        pad = self.indent * self.depth
        self.lines.append(f"{pad}{text}  {self.comment} {' '.join(note.split())}"
                          if note else pad + text)

    @contextmanager
    def nested(self) -> Iterator[None]:
        """Lines written inside are one level deeper."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def helper(self, name: str, text: Callable[[], str]) -> str:
        """Define helper function ``name`` once, as ``text()`` returns it; return ``name``.

        ``text`` runs only the first time, and the helpers it asks for come first.
        """
        if name not in self.helpers:
            self.helpers[name] = text()
        return name

    def need(self, feature: str) -> None:
        """Record that the program needs ``feature`` of its target (an extension...)."""
        self.needs.add(feature)

    def fail(self, message: str) -> NoReturn:
        """Refuse the kernel: what the target lacks, as a ``CompilationError``."""
        raise CompilationError(message, kernel=self.kernel.name, backend=self.backend)

    # ------------------------------------------------------------ dispatch

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """Emit ``stmts`` in order, up to and including the first jump."""
        for s in stmts:
            self.stmt(s)
            if isinstance(s, _JUMPS):
                break

    def stmt(self, s: ir.Stmt) -> None:
        """Emit one statement, through the subclass's ``stmt_<kind>`` method."""
        getattr(self, _STMTS[type(s)])(s)

    def expr(self, e: ir.Expr) -> str:
        """The text of one expression, from the subclass's ``expr_<kind>`` method."""
        return getattr(self, _EXPRS[type(e)])(e)
