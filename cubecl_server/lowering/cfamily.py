"""The C-family emitter, and the dialect protocol that says how one C-like language
spells what differs.

:class:`CEmitter` writes the core IR (:mod:`cubecl_server.lowering.passes`) as C:
statements as C statements, expressions fully parenthesised and of exactly their IR
type. What the IR means is the passes' (checked accesses, loops, division, shifts,
the integer and math functions a target lacks...); what is left here is how C spells
the rest where C's own rules differ from the IR's: signed arithmetic wraps (C's
overflows), 8- and 16-bit integers are brought back from C's promotion to ``int``,
literals are exact (the most negative integer, NaN, the infinities), ``bool`` is a
byte in memory, locals start at zero.

Lines (``docs/ir.md``): each line type is the target's vector type where the dialect
names one (:meth:`CDialect.vector_type`), else a struct of an array (``cc_<elem>x<N>``,
``.v[k]``); an operation on lines is the dialect's vector operator where it has one
(``+ - * /`` and the bitwise ones, :attr:`CDialect.vector_ops`), else a helper function
applying the scalar operation to each element; a line load or store reads or writes
its elements (the dialect may do it at once).

A :class:`CDialect` supplies only the spellings: type names and literals, casts and
bit casts, math functions, the builtins, metadata, atomics, plane operations,
barriers, memory, vector types, and the program around the body; and the
:class:`~cubecl_server.lowering.passes.Native` saying what its target computes
itself. :class:`StandardC` spells every one of them as C99 does; a dialect subclasses
it and overrides what its language spells otherwise, and adds what C99 has no word for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from cubecl_server import ir
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes import INT_FUNCTIONS, Native
from cubecl_server.lowering.printf import printf_format
from cubecl_server.lowering.structured import Metadata, StructuredEmitter, metadata_kind

__all__ = ["ArrayRef", "CDialect", "CEmitter", "StandardC", "UNSIGNED"]

Elem = ir.Elem
B = ir.BuiltinName

UNSIGNED = {Elem.I32: Elem.U32, Elem.U32: Elem.U32, Elem.I64: Elem.U64, Elem.U64: Elem.U64,
            Elem.I8: Elem.U8, Elem.U8: Elem.U8, Elem.I16: Elem.U16, Elem.U16: Elem.U16}
"""The unsigned integer type of each integer type's width."""

_BITWISE = (ir.BinOp.BITAND, ir.BinOp.BITOR, ir.BinOp.BITXOR)
_WRAPPING = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL)
# The builtins in the order the entry point declares them.
_BUILTIN_ORDER = tuple(B)
# The C99 name of each math function the IR has on floats, where it is not the IR's.
_FLOAT_FNS = {ir.MathFn.ABS: "fabs", ir.MathFn.MIN: "fmin", ir.MathFn.MAX: "fmax",
              ir.MathFn.ROUND: "rint"}


@dataclass(frozen=True)
class ArrayRef:
    """An array as the body reaches it: an array parameter, a shared or a local array."""

    name: str
    """Its IR name."""
    text: str
    """What the body calls it (``p_<stem>`` for a parameter, ``s_<stem>`` shared,
    ``a_<stem>`` local)."""
    elem: Elem
    shared: bool
    local: bool = False
    """A local array: declared in the entry point, each unit's own."""


@dataclass(frozen=True)
class _Text:
    """A piece of target text standing for an operand of ``type`` inside IR the emitter
    builds to apply a scalar operation to one element of a line."""

    text: str
    type: ir.Elem


_VECTOR_OPS = frozenset({ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.DIV,
                         ir.BinOp.BITAND, ir.BinOp.BITOR, ir.BinOp.BITXOR})
_C99_MATH = frozenset(ir.MathFn) - {ir.MathFn.RSQRT, ir.MathFn.RHYPOT, ir.MathFn.POWI,
                                    *INT_FUNCTIONS}
"""The float functions C99's ``<math.h>`` has, accurately (a libm's)."""


def _describe(e: ir.Expr) -> str:
    """``e`` quoted for a message (its type where it holds the emitter's own parts)."""
    try:
        return f"`{ir.format_expr(e)}`"
    except TypeError:
        return f"a {e.type.value} value"


class StandardC:
    """How one C-like language spells what :class:`CEmitter` leaves to it, as C99 has
    it (``<stdint.h>``, ``<stdbool.h>``, ``<math.h>``): a dialect subclasses it and
    overrides what its language spells otherwise, and adds what C99 has no word for.

    Methods get the emitter ``e`` to ask it for what they need: ``e.ctype``,
    ``e.literal``, ``e.cast``, ``e.helper`` and ``e.function`` (helper functions),
    ``e.need`` (features), ``e.builtin_ref``, ``e.metadata``, ``e.line``, ``e.fail``.
    A dialect with state (what a launch must pass...) is made per kernel. One that
    lowers tensor maps sets ``tensor_maps = True`` and has
    ``tensor_map_load(e, s, coords)``; without it the emitter refuses them.

    C99 has no words for the entry point (``head``, ``signature``, ``prologue``), the
    builtins, atomics and plane operations: they refuse here. Its :attr:`native`:
    C's ``&&``/``||`` short-circuit, ``fmin``/``fmax`` have the NaN rule, ``fmod`` is
    exact and ``<math.h>`` has every float function but ``rsqrt``; the per-axis grid
    builtins are the dialect's to spell (``builtin``).
    """

    backend = "c"
    """The backend's name, in errors."""
    types: Mapping[Elem, str] = {
        Elem.F32: "float", Elem.F64: "double", Elem.I32: "int32_t", Elem.I64: "int64_t",
        Elem.U32: "uint32_t", Elem.U64: "uint64_t", Elem.BOOL: "bool", Elem.I8: "int8_t",
        Elem.U8: "uint8_t", Elem.I16: "int16_t", Elem.U16: "uint16_t"}
    """The type of each element type in registers; a type missing is unsupported."""
    bool_memory = "uint8_t"
    """The type of a bool element in memory (a byte)."""
    int_suffixes: Mapping[Elem, str] = {Elem.I32: "", Elem.I64: "LL", Elem.U32: "u",
                                        Elem.U64: "uLL"}
    """The literal suffix of each integer type."""
    function_prefix = "static "
    """What precedes a helper function's return type."""
    signed_wraps = False
    """Whether signed ``+ - * <<`` wrap as written (else they go through unsigned)."""
    barrier = ""
    """The statement that waits for the cube (with a memory fence); empty for none."""
    unroll = ""
    """The line before a loop asking to unroll it; empty for none."""
    shared_space = ""
    """What declares an array in cube-local memory (``__shared__ ``...)."""
    line_sizes: tuple[int, ...] = (1,)
    """The line sizes the target has (1 always); a kernel with another is refused."""
    vector_ops = False
    """Whether ``+ - * /`` and ``& | ^`` act per element on the vector types."""
    f32_suffix = "f"
    """What single-precision math functions end with (``expf``); empty if overloaded."""
    native = Native(short_circuit=True, nan_minmax=True, float_rem=True,
                    functions={Elem.F32: _C99_MATH, Elem.F64: _C99_MATH})
    """What the target computes itself: the passes lower the rest."""

    def prepare(self, e: CEmitter) -> None:
        """Look the kernel over before any line is written (refuse what the target
        lacks): nothing to refuse in C99."""

    def use_type(self, e: CEmitter, elem: Elem, what: str, memory: bool) -> None:
        """``elem`` is used, in memory or not; ``what`` says where, for a refusal: a type
        without a name here is refused."""
        if elem not in self.types:
            e.fail(f"{what} is {elem.value}, which the {self.backend} backend lacks")

    def float_literal(self, value: float, elem: Elem) -> str:
        """An exact literal of a float type: hexadecimal; ``NAN`` and ``INFINITY`` for
        the rest."""
        v = value if elem is Elem.F64 else float(np.float32(value))
        suffix = "" if elem is Elem.F64 else "f"
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            text = v.hex() + suffix
            return f"({text})" if text.startswith("-") else text
        return f"((double){text})" if elem is Elem.F64 else text  # float constants

    def convert(self, type_name: str, x: str) -> str:
        """``x`` converted to a named type: C's cast (what the defaults here convert by)."""
        return f"(({type_name}){x})"

    def cast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """``x`` converted from ``src`` to another type ``dst`` (``docs/ir.md``'s rules):
        C's conversions; to bool, ``x != 0``."""
        if dst is Elem.BOOL:
            return f"({x} != {e.literal(0, src)})"
        return self.convert(self.types[dst], x)

    def bitcast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """``x``'s bits as another numeric type of its width (32 or 64 bits): between
        integers a conversion (modulo 2^bits, as every C compiler does it); with a
        float, a helper copying the bits through a union."""
        if src.is_int and dst.is_int:
            return self.convert(self.types[dst], x)
        name = f"cc_bitcast_{src.value}_{dst.value}"
        s, d = e.ctype(src), e.ctype(dst)
        e.helper(name, lambda: e.function(d, name, [(s, "x")], [
            f"union {{ {s} from; {d} to; }} v;", "v.from = x;", "return v.to;"]))
        return f"{name}({x})"

    def math(self, e: CEmitter, fn: str, args: list[str], t: Elem) -> str:
        """C99 math function ``fn`` (``exp``, ``fabs``, ``fmin``, ``fmod``, ``isnan``,
        ``rint``, ``atan2``, ``hypot``...; and ``rsqrt``) of float type ``t``:
        ``<math.h>``'s (``isnan`` as a bool)."""
        if fn in ("isnan", "isinf"):
            return f"({fn}({args[0]}) != 0)"
        return f"{fn}{self.f32_suffix if t is Elem.F32 else ''}({', '.join(args)})"

    def bits(self, e: CEmitter, fn: ir.MathFn, args: list[str], t: Elem) -> str:
        """An integer function of ``native.functions`` (``COUNT_ONES``...
        ``SATURATING_SUB``, ``docs/ir.md``) of integer type ``t``; refused: C99 has none
        of them (a dialect that has one declares it native)."""
        e.fail(f"{fn.value} has no spelling on the {self.backend} backend")

    def builtin(self, e: CEmitter, name: ir.BuiltinName) -> str | None:
        """A builtin of ``native.builtins``, as the target has it (None: it has not, as
        C99 has no launch grid)."""
        return None

    def metadata(self, e: CEmitter, kind: str, array: ir.Param, dim: int) -> str:
        """An array parameter's ``len``, ``buffer_len``, ``rank``, ``shape`` or ``stride``
        (along ``dim``), u32 (``lowering.metadata_kind``): a parameter of the entry
        point, ``len_<a>`` (the buffer's length, checked
        mode's bound), ``n_<a>`` (the logical length), ``rank_<a>``, ``shape_<a>_<d>``,
        ``stride_<a>_<d>``."""
        stem = e.stems[array.name]
        named = {"buffer_len": "len_", "len": "n_", "rank": "rank_"}.get(kind)
        return f"{named}{stem}" if named else f"{kind}_{stem}_{dim}"

    def pointer(self, e: CEmitter, array: ArrayRef, const: bool) -> str:
        """The type of a pointer to ``array``'s elements."""
        return f"{'const ' if const else ''}{e.mtype(array.elem)}*"

    def subscript(self, array: ArrayRef, index: str, index_type: Elem) -> str:
        """The element of ``array`` at ``index``, as an lvalue: ``a[i]``."""
        return f"{array.text}[{index}]"

    def vector_type(self, e: CEmitter, elem: Elem, size: int) -> str | None:
        """The target's vector of ``size`` ``elem``, or None (C99's: it has none): a
        struct stands in."""
        return None

    def component(self, x: str, k: int, size: int) -> str:
        """Element ``k`` of the vector ``x`` (a primary expression), as an lvalue:
        ``x.v[k]``, the emitter's struct (C99 has no vectors)."""
        return f"{x}.v[{k}]"

    def vector_make(self, e: CEmitter, type_name: str, parts: list[str]) -> str:
        """A vector of ``type_name`` from its elements: a compound literal (never called:
        C99 has no vectors)."""
        return f"(({type_name}){{{', '.join(parts)}}})"

    def vector_fill(self, e: CEmitter, type_name: str, x: str) -> str | None:
        """A vector of ``type_name`` with every element ``x``, or None (C99's) to make it
        element by element."""
        return None

    def struct_decl(self, e: CEmitter, name: str, member: str, size: int) -> str:
        """The declaration of the struct ``name`` standing for a line (``member v[size]``):
        ``typedef struct { T v[N]; } name;``."""
        return f"typedef struct {{ {member} v[{size}]; }} {name};"

    def struct_make(self, e: CEmitter, name: str, member: str, parts: list[str]) -> str:
        """A struct ``name`` (of :meth:`struct_decl`) from its elements: a compound
        literal."""
        return f"(({name}){{{{{', '.join(parts)}}}}})"

    def load_line(self, e: CEmitter, array: ArrayRef, index: str, index_type: Elem,
                  t: ir.Line) -> str:
        """Line ``index`` (of ``index_type``) of a line array, as a value of ``t``: a
        helper per line type, memory and index type reading the elements through a
        pointer (the index evaluated once)."""
        return e.line_loader(array, index, index_type, t, lambda j: f"a[{j}]")

    def store_whole_line(self, e: CEmitter, array: ArrayRef, index: str, index_type: Elem,
                         value: str, t: ir.Line) -> str | None:
        """A statement storing the whole line ``index`` at once, or None (C99's) to store
        it element by element."""
        return None

    def to_memory(self, x: str, elem: Elem) -> str:
        """A value as an array element holds it (bool as a byte)."""
        return self.convert(self.bool_memory, x) if elem is Elem.BOOL else x

    def from_memory(self, x: str, elem: Elem) -> str:
        """An array element as a value (a byte as a bool)."""
        return f"({x} != 0)" if elem is Elem.BOOL else x

    def atomic(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
               operands: list[str]) -> str:
        """A call doing ``op`` on lvalue ``element`` with ``operands`` (the compare value
        first, for a compare-exchange), giving the old value; ``max`` and ``min`` on
        f32 are ``fmax``/``fmin`` where ``native.float_atomics`` has them, and a
        compare-exchange on an f32 array has ``u32`` operands and acts on the bits.
        Refused: C99 has no atomics."""
        e.fail(f"atomic {op.value} needs atomics, which the {self.backend} backend lacks")

    def plane(self, e: CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
              t: Elem) -> str:
        """A plane operation (``lane`` a u32, for ``BROADCAST``); refused: C99 has no
        planes."""
        e.fail(f"plane_{fn.value} needs plane operations, which the {self.backend} "
               "backend lacks")

    def plane_barrier(self, e: CEmitter) -> str:
        """The statement that waits for the plane (``sync_plane``), with a memory fence;
        refused: C99 has no planes."""
        e.fail(f"sync_plane needs plane operations, which the {self.backend} backend lacks")

    def shared_decl(self, e: CEmitter, sh: ir.SharedArray, name: str) -> str | None:
        """The declaration of a shared array in the entry point (None: it is declared
        with the program's head): an array in :attr:`shared_space`."""
        return f"{self.shared_space}{e.mtype(sh.elem)} {name}[{sh.size}];"

    def head(self, e: CEmitter) -> list[str]:
        """The lines before the helpers: includes, extensions, global declarations
        (C99's headers)."""
        return ["#include <stdint.h>", "#include <stdbool.h>", "#include <math.h>"]

    def signature(self, e: CEmitter) -> str:
        """The entry point's declaration, up to its body: refused, C99 has no entry
        point of a launch."""
        e.fail(f"the {self.backend} backend's dialect names no entry point (signature)")

    def prologue(self, e: CEmitter) -> None:
        """Write the entry point's first lines (parameters unpacked...), with
        ``e.line``: none in C99."""


CDialect = StandardC
"""The dialect protocol, which :class:`StandardC` states once with C99's spellings:
what a dialect subclassing it overrides."""


_C_INT = {ir.Elem.I32: "int", ir.Elem.U32: "unsigned int", ir.Elem.I64: "long",
          ir.Elem.U64: "unsigned long"}
"""The C type of each integer type a printed value is passed as."""


def _c_string(text: str) -> str:
    """``text`` (printable ASCII and newlines) as the inside of a C string literal."""
    return (text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?")
            .replace("\n", "\\n"))


class CEmitter(StructuredEmitter):
    """Writes one kernel as a C-like program, spelled by ``dialect``: see the module.

    Names in the body: ``p_<stem>`` for parameters (an array's pointer or buffer, a
    scalar's value), ``l_<stem>`` locals, ``s_<stem>`` shared arrays, ``b_<BUILTIN>``
    builtins (declared at the top of the entry point), ``t<n>`` temporaries, ``cc_*``
    helpers; a dialect names what it adds with other prefixes.
    """

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
                 dialect: CDialect) -> None:
        self.d = dialect
        super().__init__(kernel, cube_dim, mode, dialect.backend, dialect.native)
        kernel = self.kernel
        self.written = kernel.written_arrays
        self.builtins: set[ir.BuiltinName] = set()
        self.meta_used: dict[tuple[str, str, int], str] = {}
        """Metadata the program reads, (kind, array, dim) -> its text, in first-use order."""
        self._types: set[tuple[ir.Type, bool]] = set()
        self._line_helpers: dict[tuple[object, ...], str] = {}
        dialect.prepare(self)
        for p in kernel.params:
            self.use(p.elem, p.array, f"parameter {p.name!r}")
        for loc in kernel.locals:
            self.use(loc.elem, False, f"local {loc.name!r}")
        for sh in kernel.shared:
            self.use(sh.elem, True, f"shared array {sh.name!r}")
        for la in kernel.local_arrays:
            self.use(la.elem, True, f"local array {la.name!r}")

    # ------------------------------------------------------------ for dialects

    def use(self, elem: ir.Type, memory: bool, what: str) -> None:
        """Tell the dialect (once per type and place) that ``elem`` is used (a line's
        element type; a line size the dialect lacks is refused)."""
        if (elem, memory) not in self._types:
            self._types.add((elem, memory))
            if isinstance(elem, ir.Line):
                if elem.size not in self.d.line_sizes:
                    self.fail(f"{what} is a {elem.value}, but the {self.backend} backend has "
                              f"lines of {', '.join(map(str, self.d.line_sizes))} "
                              "(Capabilities.line_sizes)")
                self.use(elem.elem, memory, what)
                return
            self.d.use_type(self, elem, what, memory)

    def ctype(self, elem: ir.Type) -> str:
        """The type of ``elem`` in registers (a line: the dialect's vector, or a struct
        of an array declared with the helpers)."""
        self.use(elem, False, f"a {elem.value} value")
        if isinstance(elem, ir.Line):
            return self._line_type(elem)
        return self.d.types[elem]

    # ------------------------------------------------------------ lines

    def _line_type(self, t: ir.Line) -> str:
        native = self.d.vector_type(self, t.elem, t.size)
        if native is not None:
            return native
        name = f"cc_{t.elem.value}x{t.size}"
        self.helper(name, lambda: self.d.struct_decl(self, name, self.ctype(t.elem), t.size))
        return name

    def part(self, x: str, t: ir.Line, k: int) -> str:
        """Element ``k`` of the line ``x`` (a primary expression) of type ``t``."""
        if self.d.vector_type(self, t.elem, t.size) is None:
            return f"{x}.v[{k}]"
        return self.d.component(x, k, t.size)

    def make(self, t: ir.Line, parts: list[str]) -> str:
        """A line of ``t`` from its elements."""
        name = self._line_type(t)
        if self.d.vector_type(self, t.elem, t.size) is None:
            return self.d.struct_make(self, name, self.ctype(t.elem), parts)
        return self.d.vector_make(self, name, parts)

    def fill(self, t: ir.Line, x: str) -> str:
        """A line of ``t`` with every element ``x`` (a name or a literal: it may be
        written once per element)."""
        name = self._line_type(t)
        if self.d.vector_type(self, t.elem, t.size) is not None:
            native = self.d.vector_fill(self, name, x)
            if native is not None:
                return native
        return self.make(t, [x] * t.size)

    def zero(self, t: ir.Type) -> str:
        """The zero of ``t`` (each element 0, for a line)."""
        if isinstance(t, ir.Line):
            return self.fill(t, self.literal(0, t.elem))
        return self.literal(0, t)

    def elementwise(self, e: ir.Expr, operands: tuple[ir.Expr, ...],
                    rebuild: Callable[[tuple[ir.Expr, ...]], ir.Expr]) -> str:
        """A line operation as a helper applying the scalar one to each element:
        ``rebuild`` makes the scalar node from scalar operands (elements of the line
        operands, scalar operands as they are)."""
        t = e.type
        assert isinstance(t, ir.Line)
        texts = [self.expr(x) for x in operands]
        key = (type(e).__name__, getattr(e, "op", None), getattr(e, "fn", None),
               tuple(x.type for x in operands), t)
        name = self._line_helpers.get(key)
        if name is None:
            name = self._line_helpers[key] = f"cc_line{len(self._line_helpers) + 1}"
            params = [(self.ctype(x.type), f"a{i}") for i, x in enumerate(operands)]

            def at(k: int) -> str:
                parts = tuple(
                    _Text(self.part(f"a{i}", x.type, k), x.type.elem)
                    if isinstance(x.type, ir.Line) else _Text(f"a{i}", x.type)
                    for i, x in enumerate(operands))
                return self.expr(rebuild(parts))  # type: ignore[arg-type]

            self.helper(name, lambda: self.function(
                self.ctype(t), name, params,
                [f"return {self.make(t, [at(k) for k in range(t.size)])};"]))
        return f"{name}({', '.join(texts)})"

    def line_loader(self, array: ArrayRef, index: str, index_type: Elem, t: ir.Line,
                    element: Callable[[str], str], whole: str | None = None) -> str:
        """A call of a helper reading line ``index`` of ``array`` once: ``element(j)``
        reads element ``j`` through the helper's pointer ``a``, ``whole`` the whole line
        at ``i`` where the target can."""
        space = "shared" if array.shared else "local" if array.local else "global"
        name = f"cc_load_{t.elem.value}x{t.size}_{space}_{index_type.value}"
        lit = lambda v: self.literal(v, index_type)  # noqa: E731

        def body() -> list[str]:
            parts = [self.d.from_memory(element(f"i * {lit(t.size)} + {lit(k)}"), t.elem)
                     for k in range(t.size)]
            return [f"return {whole or self.make(t, parts)};"]

        self.helper(name, lambda: self.function(
            self.ctype(t), name, [(self.d.pointer(self, array, True), "a"),  # type: ignore[attr-defined]
                                  (self.ctype(index_type), "i")], body()))
        return f"{name}({array.text}, {index})"

    def mtype(self, elem: Elem) -> str:
        """The type of an ``elem`` array element."""
        self.use(elem, True, f"an array of {elem.value}")
        return self.d.bool_memory if elem is Elem.BOOL else self.d.types[elem]

    def literal(self, value: float | bool, elem: Elem) -> str:
        """A constant of exactly ``elem``; an integer wraps into its range."""
        self.use(elem, False, f"a {elem.value} constant")
        if elem is Elem.BOOL:
            return "true" if value else "false"
        if elem.is_float:
            return self.d.float_literal(float(value), elem)
        bits = elem.bits
        v = int(value) & ((1 << bits) - 1)
        if elem.is_signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        if elem.is_narrow:
            # No suffix makes a literal this narrow: an int literal converted to it.
            return f"(({self.ctype(elem)}){v})"
        suffix = self.d.int_suffixes[elem]
        if v == -(1 << (bits - 1)):
            # No literal is the most negative value: -2147483648 is -(2147483648).
            return f"(-{-v - 1}{suffix} - 1{suffix})"
        return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"

    def cast(self, x: str, src: Elem, dst: Elem) -> str:
        """``x`` as ``dst``."""
        return x if src is dst else self.d.cast(self, x, src, dst)

    def function(self, ret: str, name: str, params: list[tuple[str, str]],
                 body: list[str]) -> str:
        """A helper function's definition: ``(type, name)`` parameters, body lines."""
        args = ", ".join(f"{t} {n}" for t, n in params)
        return "\n".join([f"{self.d.function_prefix}{ret} {name}({args}) {{",
                          *(self.indent + b for b in body), "}"])

    def builtin_ref(self, name: ir.BuiltinName) -> str:
        """The variable holding builtin ``name`` (declared at the top of the entry point)."""
        self.builtins.add(name)
        return f"b_{name.value}"

    def metadata(self, kind: str, array: str, dim: int = 0) -> str:
        """An array parameter's ``len``/``buffer_len``/``rank``/``shape``/``stride``, as
        the dialect passes it."""
        key = (kind, array, dim)
        if key not in self.meta_used:
            self.meta_used[key] = self.d.metadata(self, kind, self.arrays[array], dim)
        return self.meta_used[key]

    def array(self, name: str) -> ArrayRef:
        """The parameter, shared or local array called ``name``."""
        if name in self.shared:
            return ArrayRef(name, f"s_{self.stems[name]}", self.shared[name].elem, True)
        if name in self.local_arrays:
            return ArrayRef(name, f"a_{self.stems[name]}", self.local_arrays[name].elem,
                            False, local=True)
        return ArrayRef(name, f"p_{self.stems[name]}", self.arrays[name].elem, False)

    def wrap(self, sym: str, a: str, b: str, t: Elem) -> str:
        """``a sym b`` modulo 2^bits: on a signed type through its unsigned one (unless
        the dialect's signed arithmetic wraps), since C's overflows."""
        if t.is_narrow:
            # C computes on int, which a product of two 16-bit values overflows: compute
            # on uint32, then convert back to the type (modulo 2^bits).
            u32 = self.ctype(Elem.U32)
            return self.cast(f"(({u32}){a} {sym} ({u32}){b})", Elem.U32, t)
        if not t.is_signed or self.d.signed_wraps:
            return f"({a} {sym} {b})"
        u, d = UNSIGNED[t], self.d
        return d.bitcast(self, f"({d.bitcast(self, a, t, u)} {sym} {d.bitcast(self, b, t, u)})",
                         u, t)

    # ------------------------------------------------------------ the program

    def program(self) -> str:
        """The whole program: head, helpers, then the entry point."""
        self.depth = 1
        self.block(self.kernel.body)
        body, self.lines = self.lines, []
        self.d.prologue(self)
        self._declare_builtins()
        for loc in self.kernel.locals:
            self.line(f"{self.ctype(loc.elem)} l_{self.stems[loc.name]} = "
                      f"{self.zero(loc.elem)};", f"var {loc.name}: {loc.elem.value}")
        for sh in self.kernel.shared:
            decl = self.d.shared_decl(self, sh, f"s_{self.stems[sh.name]}")
            if decl is not None:
                self.line(decl, f"shared {sh.name}: {sh.elem.value}[{sh.size}]")
        for la in self.kernel.local_arrays:
            self.line(f"{self.mtype(la.elem)} a_{self.stems[la.name]}[{la.size}];",
                      f"local {la.name}: {la.elem.value}[{la.size}]")
        entry = [self.d.signature(self), "{", *self.lines, *body, "}"]
        head = [f"{self.comment} {self.title()}", *self.d.head(self), ""]
        for text in self.helpers.values():
            head += [text, ""]
        return "\n".join([*head, *entry]) + "\n"

    def _declare_builtins(self) -> None:
        u32 = self.ctype(Elem.U32)
        for n in _BUILTIN_ORDER:
            if n in self.builtins:
                text = self.d.builtin(self, n)
                if text is None:
                    self.fail(f"{n.value} has no spelling on the {self.backend} backend")
                self.line(f"const {u32} b_{n.value} = {text};")

    # ------------------------------------------------------------ statements

    def _cond(self, e: ir.Expr) -> str:
        """A condition in one pair of parentheses (clang warns about a doubled pair)."""
        text, depth = self.expr(e), 0
        for i, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(text) - 1:
                return f"({text})"  # not one group: ``(a) && (b)``, ``x``
        return text if text.startswith("(") else f"({text})"

    def _nested_block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        with self.nested():
            self.block(stmts)

    def stmt_assign(self, s: ir.Assign) -> None:
        """``l = value;``."""
        self.line(f"l_{self.stems[s.name]} = {self.expr(s.value)};", ir.format_stmt(s))

    def stmt_if(self, s: ir.If) -> None:
        """``if (c) { } else { }``."""
        self.line(f"if {self._cond(s.cond)} {{", ir.format_stmt(s))
        self._nested_block(s.then)
        if s.orelse:
            self.line("} else {")
            self._nested_block(s.orelse)
        self.line("}")

    def stmt_while(self, s: ir.While) -> None:
        """``while (c) { }``."""
        self.line(f"while {self._cond(s.cond)} {{", ir.format_stmt(s))
        self._nested_block(s.body)
        self.line("}")

    def stmt_for(self, s: ir.For) -> None:
        """The core IR's counted loop: ``for (k = 0; k < n; k++)``."""
        k, ct = f"l_{self.stems[s.var]}", self.ctype(self.locals[s.var].elem)
        if s.unroll and self.d.unroll:
            self.line(self.d.unroll)
        self.line(f"for ({k} = {self.expr(s.start)}; {k} < {self.expr(s.stop)}; {k}++) {{",
                  f"{ct} counter")
        self._nested_block(s.body)
        self.line("}")

    def stmt_break(self, s: ir.Break) -> None:
        """``break;``."""
        self.line("break;")

    def stmt_continue(self, s: ir.Continue) -> None:
        """``continue;``."""
        self.line("continue;")

    def stmt_return(self, s: ir.Return) -> None:
        """``return;``: this unit's work ends."""
        self.line("return;")

    def stmt_barrier(self, s: ir.Barrier) -> None:
        """The dialect's barrier."""
        self.line(self._barrier(), ir.format_stmt(s))

    def stmt_sync_plane(self, s: ir.SyncPlane) -> None:
        """The dialect's plane barrier."""
        self.line(self.d.plane_barrier(self), ir.format_stmt(s))

    def stmt_debug_print(self, s: ir.DebugPrint) -> None:
        """``printf`` (:func:`~cubecl_server.lowering.printf.printf_format`): each value
        cast to the integer type it is passed as, a float left to C's promotion (OpenCL
        C prints a float as it is), ``half`` made a ``float``."""
        fmt, passed = printf_format(s)
        args = []
        for a, t in zip(s.args, passed, strict=True):
            x = self.expr(a)
            cast = "float" if a.type is ir.Elem.F16 else None if t.is_float else _C_INT[t]
            args.append(f"({cast}){x}" if cast else x)
        self.line(f'printf("{_c_string(fmt)}"{"".join(", " + x for x in args)});',
                  ir.format_stmt(s))

    def takes_tensor_maps(self) -> bool:
        """Whether the dialect lowers tensor maps (its ``tensor_maps``)."""
        return bool(getattr(self.d, "tensor_maps", False))

    def stmt_tensor_map_load(self, s: ir.TensorMapLoad) -> None:
        """The dialect's tensor-map load, with the coordinates' texts."""
        self.d.tensor_map_load(self, s, [self.expr(c) for c in s.coords])  # type: ignore[attr-defined]

    def _barrier(self) -> str:
        if not self.d.barrier:
            self.fail(f"a barrier (sync_cube, or shared memory, which starts zeroed behind "
                      f"one) needs what the {self.backend} backend lacks")
        return self.d.barrier

    def stmt_store(self, s: ir.Store) -> None:
        """``a[i] = v;`` (a line's elements, or the whole line as the dialect has it)."""
        a = self.array(s.array)
        t = s.value.type
        if isinstance(t, ir.Line):
            i, v = self.temp(), self.temp()
            ut = ir.elem_of(s.index.type)
            self.line(f"{{ const {self.ctype(ut)} {i} = {self.expr(s.index)}; "
                      f"const {self.ctype(t)} {v} = {self.expr(s.value)};", ir.format_stmt(s))
            size = lambda k: self.literal(k, ut)  # noqa: E731
            whole = self.d.store_whole_line(self, a, i, ut, v, t) or " ".join(
                f"{self.d.subscript(a, f'{i} * {size(t.size)} + {size(k)}', ut)} = "
                f"{self.d.to_memory(self.part(v, t, k), t.elem)};" for k in range(t.size))
            with self.nested():
                self.line(whole)
            self.line("}")
            return
        target = self.d.subscript(a, self.expr(s.index), s.index.type)
        self.line(f"{target} = {self.d.to_memory(self.expr(s.value), a.elem)};",
                  ir.format_stmt(s))

    def stmt_atomic(self, s: ir.AtomicStmt) -> None:
        """The dialect's atomic, the old value into the result's local."""
        a = self.array(s.array)
        operands = [self.expr(x) for x in (s.compare, s.value) if x is not None]
        result = "" if s.result is None else f"l_{self.stems[s.result]} = "
        target = self.d.subscript(a, self.expr(s.index), s.index.type)
        self.line(f"{result}{self.d.atomic(self, s.op, a, target, operands)};",
                  ir.format_stmt(s))

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> str:
        """C for ``e``, fully parenthesised, of exactly its IR type."""
        if isinstance(e, _Text):
            return e.text
        if (e.type, False) not in self._types:
            self.use(e.type, False, _describe(e))
        if isinstance(e.type, ir.Line) and not isinstance(
                e, (ir.Var, ir.Load, ir.LineFill, ir.LineMake)):
            return self._line_expr(e)
        return super().expr(e)

    def _line_expr(self, e: ir.Expr) -> str:
        """An operation giving a line: the dialect's vector operator, else per element."""
        t = e.type
        assert isinstance(t, ir.Line)
        match e:
            case ir.Binary(op=op, lhs=a, rhs=b) if (
                    self.d.vector_ops and op in _VECTOR_OPS
                    and self.d.vector_type(self, t.elem, t.size) is not None
                    and (t.elem.is_float or (op is not ir.BinOp.DIV and (
                        not t.elem.is_signed or self.d.signed_wraps or op not in _WRAPPING)))):
                return f"({self.expr(a)} {op.value} {self.expr(b)})"
            case ir.Binary(op=op, lhs=a, rhs=b, type=rt):
                return self.elementwise(e, (a, b), lambda xs: ir.Binary(
                    op, xs[0], xs[1], ir.elem_of(rt)))
            case ir.Unary(op=op, x=x):
                return self.elementwise(e, (x,), lambda xs: ir.Unary(op, xs[0], t.elem))
            case ir.Math(fn=fn, args=args):
                return self.elementwise(e, args, lambda xs: ir.Math(fn, xs, t.elem))
            case ir.Cast(x=x):
                return self.elementwise(e, (x,), lambda xs: ir.Cast(xs[0], t.elem))
            case ir.Select(cond=c, a=a, b=b):
                return self.elementwise(e, (c, a, b), lambda xs: ir.Select(
                    xs[0], xs[1], xs[2], t.elem))
        raise AssertionError(e)

    def expr_line_fill(self, e: ir.LineFill) -> str:
        """The dialect's fill, or a helper building the line from its one argument."""
        x = self.expr(e.x)
        if isinstance(e.x, (ir.Const, ir.Var)):
            return self.fill(e.type, x)
        name = f"cc_fill_{e.type.elem.value}x{e.type.size}"
        self.helper(name, lambda: self.function(
            self.ctype(e.type), name, [(self.ctype(e.type.elem), "x")],
            [f"return {self.fill(e.type, 'x')};"]))
        return f"{name}({x})"

    def expr_line_element(self, e: ir.LineElement) -> str:
        """The element of the line."""
        x = e.x.type
        assert isinstance(x, ir.Line)
        return self.part(self.expr(e.x), x, e.index)

    def expr_line_make(self, e: ir.LineMake) -> str:
        """The line of its elements."""
        return self.make(e.type, [self.expr(x) for x in e.parts])

    def expr_const(self, e: ir.Const) -> str:
        """A literal."""
        return self.literal(e.value, e.type)

    def expr_var(self, e: ir.Var) -> str:
        """A local or a scalar parameter."""
        return f"{'l' if e.name in self.locals else 'p'}_{self.stems[e.name]}"

    def expr_builtin(self, e: ir.Builtin) -> str:
        """A builtin, declared at the top of the entry point."""
        return self.builtin_ref(e.name)

    def expr_binary(self, e: ir.Binary) -> str:
        """Operators; signed and narrow arithmetic as the IR's, not C's."""
        op, t = e.op, e.lhs.type
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if op is ir.BinOp.AND or op is ir.BinOp.OR:
            return f"({a} {'&&' if op is ir.BinOp.AND else '||'} {b})"
        if op.is_comparison or op in _BITWISE or op is ir.BinOp.DIV or (
                t.is_float and op in _WRAPPING):
            return f"({a} {op.value} {b})"
        if op in _WRAPPING:
            return self.wrap(op.value, a, b, t)
        if op is ir.BinOp.REM and t.is_float:
            return self.d.math(self, "fmod", [a, b], t)
        if op is ir.BinOp.IDIV or op is ir.BinOp.REM:  # the divisor is never 0, nor -1
            text = f"({a} {'/' if op is ir.BinOp.IDIV else '%'} {b})"
            return self.cast(text, Elem.I32, t) if t.is_narrow else text
        if op is ir.BinOp.SHL:
            return self.wrap("<<", a, b, t)
        if t.is_narrow:  # C promoted it to int: the value fits, the type is brought back
            return self.cast(f"({a} >> {b})", Elem.I32, t)
        return f"({a} >> {b})"  # arithmetic on signed types

    def expr_unary(self, e: ir.Unary) -> str:
        """``-`` (wrapping on integers), ``!`` on bools, ``~`` on integers."""
        t, x = e.x.type, self.expr(e.x)
        if e.op is ir.UnOp.NEG:
            return self.wrap("-", self.literal(0, t), x, t) if t.is_int else f"(-{x})"
        if e.op is ir.UnOp.NOT:
            return f"(!{x})"
        # On a narrow type C's `~` gives an int (~(uint8_t)5 is -6): brought back to it.
        return self.cast(f"(~{x})", Elem.I32, t) if t.is_narrow else f"(~{x})"

    def expr_math(self, e: ir.Math) -> str:
        """The integer functions the target has, by the dialect's ``bits``; the float
        ones by its ``math``, in C99's names."""
        t = e.args[0].type
        xs = [self.expr(a) for a in e.args]
        if e.fn in INT_FUNCTIONS:
            return self.d.bits(self, e.fn, xs, t)
        return self.d.math(self, _FLOAT_FNS.get(e.fn, e.fn.value), xs, t)

    def expr_cast(self, e: ir.Cast) -> str:
        """The dialect's conversion."""
        return self.cast(self.expr(e.x), e.x.type, e.type)

    def expr_bitcast(self, e: ir.Bitcast) -> str:
        """The dialect's bit cast."""
        return self.d.bitcast(self, self.expr(e.x), e.x.type, e.type)

    def expr_select(self, e: ir.Select) -> str:
        """``c ? a : b`` (the core IR's sides hold no plane operation, which every
        unit would have to reach)."""
        return f"({self.expr(e.cond)} ? {self.expr(e.a)} : {self.expr(e.b)})"

    def expr_load(self, e: ir.Load) -> str:
        """``a[i]``: an element, or a line of a line array (read by the dialect)."""
        a = self.array(e.array)
        if isinstance(e.type, ir.Line):
            return self.d.load_line(self, a, self.expr(e.index), e.index.type, e.type)
        return self.d.from_memory(self.d.subscript(a, self.expr(e.index), e.index.type),
                                  a.elem)

    def expr_metadata(self, e: Metadata) -> str:
        """An array's length, buffer length (both in elements), rank, extent or stride,
        as the dialect passes it."""
        return self.metadata(metadata_kind(e), e.array, getattr(e, "dim", 0))

    def expr_plane(self, e: ir.PlaneOp) -> str:
        """The dialect's plane operation (the lane as a u32)."""
        lane = None if e.lane is None else self.cast(self.expr(e.lane), e.lane.type, Elem.U32)
        return self.d.plane(self, e.fn, self.expr(e.value), lane, e.type)
