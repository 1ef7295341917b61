"""The ``opencl`` backend's Compiler: IR -> OpenCL C 1.2 source.

The generated program holds one ``__kernel`` (the entry point, ``k_<name>``) with
``__attribute__((reqd_work_group_size(X, Y, Z)))`` from the cube dim, preceded by
the helper functions it uses (``cc_*``). It is device-independent; the features it
needs (:attr:`KernelLayout.needs`) are checked against the device before it is
built (:mod:`cubecl_opencl.artifact`). The IR it lowers has passed the core's
:func:`cubecl_server.ir_check.check_kernel`, so no rule of ``docs/ir.md`` is checked
here; the one refusal left is a plane operation on bool, which subgroups lack.

Kernel arguments (the launch protocol, :class:`KernelLayout`): array parameters
first, in parameter order, each as

- ``__global T* g_<a>``: the storage buffer (a pool page or a dedicated allocation),
- ``ulong o_<a>``: the slice's offset in that buffer, in elements (slices are
  never sub-buffers: offsets are arguments, so a launch creates no CL objects),
- ``uint n_<a>``: its number of elements (``len``, and the bound of checked mode),
- ``uint shp_<a>_<d>``, ``uint str_<a>_<d>`` for ``d < dims``, where ``dims`` is one
  more than the largest axis the kernel reads with ``Shape``/``Stride`` (the server
  passes 1 past the array's rank, as ``ir.Shape`` says);

then the scalar parameters in order, by value (``bool`` as ``uchar``, since a
kernel argument cannot be ``bool``). Everything is a plain argument: no metadata
buffer is written per launch.

Semantics, as ``cubecl_server.ir`` documents them:

- Names are mangled (``p_``/``l_``/``s_`` prefixes, non-ASCII characters spelled
  out), so no Python name can clash with an OpenCL keyword, builtin or helper.
- ``bool`` is ``bool`` in registers and ``uchar`` in memory (global and local).
- Signed ``+ - *``, negation and ``<<`` run on the unsigned type of the same width
  (``as_int(as_uint(a) + as_uint(b))``): signed overflow is undefined in C, and the
  IR says integers wrap. Shifts take the count modulo the width.
- ``and``/``or`` are ``&&``/``||``: the right side is evaluated only where the left
  does not decide, as the IR says.
- Integer ``//`` and ``%`` truncate (C's own ``/`` and ``%``); division by zero
  gives 0 instead of trapping, and ``MIN // -1`` wraps (C leaves both undefined).
  Float ``//`` is ``trunc(a / b)``; float ``%`` is ``fmod``.
- ``/`` and ``sqrt`` on ``f32`` are correctly rounded (build option
  ``-cl-fp32-correctly-rounded-divide-sqrt``), as NumPy's are; ``rsqrt`` is
  ``1 / sqrt(x)`` for the same reason.
- Float to integer casts saturate and map NaN to 0 (``convert_<T>_sat``, rounding
  toward zero): C leaves out-of-range conversions undefined, so this is the
  defined behaviour the backend chooses. Integer to integer casts wrap.
- ``MIN``/``MAX``/``CLAMP`` of floats are ``fmin``/``fmax`` (a NaN operand gives the
  other); of integers ``min``/``max``. Integer ``ABS`` wraps (``abs(INT_MIN)`` is
  ``INT_MIN``).
- Checked mode: a load outside ``[0, len)`` reads 0, a store or atomic there does
  nothing (an atomic's old value reads 0). Indices of every integer type are
  compared as unsigned, so a negative index is outside. Unchecked mode indexes
  directly.
- Locals start at zero, and so does shared memory (cleared by the cube's units
  before the body, then a barrier), as on the ``cpu`` reference backend.
- ``Barrier`` is ``barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)``.
- Atomics: ``i32``/``u32`` through the OpenCL 1.1 ``atomic_*`` built-ins;
  ``i64``/``u64`` through ``atom_*`` (``cl_khr_int64_base_atomics``, and
  ``..._extended_atomics`` for min/max); ``add`` on ``f32`` (the one float atomic of
  the IR) as a compare-exchange loop on the value's bits.
- Planes are subgroups (``cl_khr_subgroups``): ``sub_group_reduce_add``,
  ``sub_group_reduce_max`` and ``sub_group_broadcast``, whose lane must be the same
  across the plane (OpenCL requires it), and which every unit of the plane must
  reach.
- ``for`` evaluates its bounds once; its counter advances with wrapping arithmetic.
  ``unroll`` becomes ``#pragma unroll``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeDim

from . import BACKEND

__all__ = ["OpenclCompiler", "KernelLayout", "ArrayArg", "ScalarArg", "Need"]

Elem = ir.Elem

_CTYPE = {Elem.F16: "half", Elem.F32: "float", Elem.F64: "double", Elem.I32: "int",
          Elem.I64: "long", Elem.U32: "uint", Elem.U64: "ulong", Elem.BOOL: "bool"}
_UNSIGNED = {Elem.I32: Elem.U32, Elem.I64: Elem.U64, Elem.U32: Elem.U32, Elem.U64: Elem.U64}
_ARITH = {ir.BinOp.ADD: "+", ir.BinOp.SUB: "-", ir.BinOp.MUL: "*"}
_BITWISE = {ir.BinOp.BITAND: "&", ir.BinOp.BITOR: "|", ir.BinOp.BITXOR: "^"}
_COMPARE = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
            ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
_FLOAT_FNS = {ir.MathFn.EXP: "exp", ir.MathFn.LOG: "log", ir.MathFn.SQRT: "sqrt",
              ir.MathFn.SIN: "sin", ir.MathFn.COS: "cos", ir.MathFn.TANH: "tanh",
              ir.MathFn.ERF: "erf", ir.MathFn.FLOOR: "floor", ir.MathFn.CEIL: "ceil",
              ir.MathFn.ABS: "fabs", ir.MathFn.POW: "pow", ir.MathFn.FMA: "fma",
              ir.MathFn.MIN: "fmin", ir.MathFn.MAX: "fmax"}
_FENCE = "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"


class Need:
    """Names of the optional device features a kernel may need."""

    FP64 = "cl_khr_fp64"
    FP16 = "cl_khr_fp16"
    INT64_ATOMICS = "cl_khr_int64_atomics"
    SUBGROUPS = "cl_khr_subgroups"


@dataclass(frozen=True)
class ArrayArg:
    """One array parameter as the kernel takes it: buffer, offset, length and ``dims``
    shape/stride pairs."""

    name: str
    elem: Elem
    dims: int


@dataclass(frozen=True)
class ScalarArg:
    """One scalar parameter, passed by value."""

    name: str
    elem: Elem


@dataclass(frozen=True)
class KernelLayout:
    """What a launch must pass and what a device must have: the compiled kernel's
    ``repr``, and (as JSON) part of its artifact's header."""

    arrays: tuple[ArrayArg, ...]
    scalars: tuple[ScalarArg, ...]
    needs: frozenset[str]
    shared_bytes: int

    def to_header(self) -> dict[str, list[list[str | int]]]:
        """The layout as the JSON an artifact's header carries."""
        return {"arrays": [[a.name, a.elem.value, a.dims] for a in self.arrays],
                "scalars": [[s.name, s.elem.value] for s in self.scalars]}

    @classmethod
    def arrays_from_header(cls, header: object) -> tuple[tuple[ArrayArg, ...],
                                                         tuple[ScalarArg, ...]]:
        """The argument lists of :meth:`to_header`'s output; ValueError if malformed."""
        try:
            assert isinstance(header, dict)
            arrays = tuple(ArrayArg(str(n), Elem(e), int(d)) for n, e, d in header["arrays"])
            scalars = tuple(ScalarArg(str(n), Elem(e)) for n, e in header["scalars"])
        except (AssertionError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed parameter layout: {e}") from e
        return arrays, scalars


class OpenclCompiler:
    """The ``opencl`` backend's Compiler: an IR kernel -> an OpenCL C program's source."""

    extension = "cl"

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` for launches of ``cube_dim`` in ``mode``."""
        emitter = _Emitter(kernel, cube_dim, mode)
        source = emitter.program()
        return CompiledKernel(name=kernel.name, entry_point=emitter.entry, source=source,
                              extension=self.extension, repr=emitter.layout())


# ---------------------------------------------------------------- literals


def _int_literal(value: int, elem: Elem) -> str:
    bits = elem.bits
    v = int(value) & ((1 << bits) - 1)
    if elem.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    if elem is Elem.U32:
        return f"{v}u"
    if elem is Elem.U64:
        return f"{v}UL"
    suffix = "L" if elem is Elem.I64 else ""
    if v == -(1 << (bits - 1)):
        # The most negative value has no literal: -2147483648 is -(2147483648).
        return f"(-{(1 << (bits - 1)) - 1}{suffix} - 1{suffix})"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


def _float_literal(value: float, elem: Elem) -> str:
    v = float(value)
    if elem is not Elem.F64:
        v = float(np.float32(v))  # the literal is exact in the type (f16 via f32)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = v.hex() + ("" if elem is Elem.F64 else "f")
        if v < 0 or text.startswith("-"):
            text = f"({text})"
    if elem is Elem.F64 and not math.isfinite(v):
        return f"((double){text})"  # NAN and INFINITY are float constants
    if elem is Elem.F16:
        return f"((half){text})"
    return text


def _literal(value: int | float | bool, elem: Elem) -> str:
    if elem is Elem.BOOL:
        return "true" if value else "false"
    if elem.is_float:
        return _float_literal(float(value), elem)
    return _int_literal(int(value), elem)


def _mem_ctype(elem: Elem) -> str:
    """The C type of an element in memory (bool is a byte there)."""
    return "uchar" if elem is Elem.BOOL else _CTYPE[elem]


def _mangle(name: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"_x{ord(c):x}_"
                   for c in name)


def _paren(text: str) -> str:
    """``text`` in one pair of parentheses (clang warns about a doubled pair)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return f"({text})"  # not one group: e.g. ``(a) && (b)`` or ``x``
    return text if text.startswith("(") else f"({text})"


def _comment(text: str) -> str:
    return " ".join(text.replace("*/", "* /").split())


# ---------------------------------------------------------------- the emitter


@dataclass
class _Helpers:
    """The helper functions a program uses, by name, in the order first needed."""

    defs: dict[str, str] = field(default_factory=dict)

    def use(self, name: str, text: str) -> str:
        self.defs.setdefault(name, text)
        return name


class _Emitter:
    """Writes one kernel's program; a visitor over the IR's statements and expressions."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> None:
        self.k = kernel
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.checked = mode is ExecutionMode.CHECKED
        self.mode = mode
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.taken: set[str] = set()
        self.needs: set[str] = set()
        self.helpers = _Helpers()
        self.builtins: set[ir.BuiltinName] = set()
        self.written = kernel.written_arrays
        self.arrays: dict[str, tuple[str, ir.Param]] = {}
        self.scalars: dict[str, tuple[str, ir.Param]] = {}
        self.locals: dict[str, tuple[str, ir.Local]] = {}
        self.shared: dict[str, tuple[str, ir.SharedArray]] = {}
        self.dims: dict[str, int] = {}
        for p in kernel.params:
            if p.array:
                self.arrays[p.name] = (self._name(p.name), p)
                self.dims[p.name] = 0
            else:
                self.scalars[p.name] = (self._name(p.name), p)
        for loc in kernel.locals:
            self.locals[loc.name] = (self._name(loc.name), loc)
        for sh in kernel.shared:
            self.shared[sh.name] = (self._name(sh.name), sh)
        for n in ir.walk(kernel.body):
            if isinstance(n, (ir.Shape, ir.Stride)):
                self.dims[n.array] = max(self.dims[n.array], n.dim + 1)
        self.entry = "k_" + _mangle(kernel.name)

    # ------------------------------------------------------------ plumbing

    def _fail(self, message: str) -> NoReturn:
        raise CompilationError(message, kernel=self.k.name, backend=BACKEND)

    def _name(self, name: str) -> str:
        """The mangled stem of a user name, unique in the program (prefixes make each
        use of it: ``p_`` value, ``g_``/``o_``/``n_`` array arguments, ``l_``, ``s_``)."""
        base = _mangle(name)
        out, i = base, 1
        while out in self.taken:
            i += 1
            out = f"{base}_{i}"
        self.taken.add(out)
        return out

    def _temp(self) -> str:
        self.temps += 1
        return f"_t{self.temps}"

    def _line(self, text: str, comment: str = "") -> None:
        pad = "    " * self.depth
        self.lines.append(f"{pad}{text}  // {_comment(comment)}" if comment else pad + text)

    def _ctype(self, elem: Elem) -> str:
        if elem is Elem.F64:
            self.needs.add(Need.FP64)
        elif elem is Elem.F16:
            self.needs.add(Need.FP16)
        return _CTYPE[elem]

    # ------------------------------------------------------------ the program

    def layout(self) -> KernelLayout:
        """The launch protocol of the program :meth:`program` wrote."""
        return KernelLayout(
            arrays=tuple(ArrayArg(p.name, p.elem, self.dims[p.name])
                         for _, p in self.arrays.values()),
            scalars=tuple(ScalarArg(p.name, p.elem) for _, p in self.scalars.values()),
            needs=frozenset(self.needs),
            shared_bytes=sum(max(sh.size, 1) * (sh.elem.bits // 8)
                             for _, sh in self.shared.values()),
        )

    def program(self) -> str:
        """The whole generated program's source."""
        k = self.k
        self.depth = 1
        for loc_c, loc in self.locals.values():
            self._line(f"{self._ctype(loc.elem)} l_{loc_c} = {_literal(0, loc.elem)};",
                       f"var {loc.name}: {loc.elem.value}")
        for sh_c, sh in self.shared.values():
            self._ctype(sh.elem)
            self._line(f"__local {_mem_ctype(sh.elem)} s_{sh_c}[{max(sh.size, 1)}];",
                       f"shared {sh.name}: {sh.elem.value}[{sh.size}]")
        if self.shared:
            self.builtins.add(ir.BuiltinName.UNIT_POS)
            total = self.dim[0] * self.dim[1] * self.dim[2]
            z = self._temp()
            largest = max(max(sh.size, 1) for _, sh in self.shared.values())
            self._line(f"for (uint {z} = b_UNIT_POS; {z} < {largest}u; {z} += {total}u) {{",
                       "shared memory starts at zero")
            for sh_c, sh in self.shared.values():
                self._line(f"    if ({z} < {max(sh.size, 1)}u) s_{sh_c}[{z}] = 0;")
            self._line("}")
            self._line(f"barrier({_FENCE});")
        self._block(k.body)
        body = self.lines
        self.lines = []
        for p_c, p in self.scalars.values():
            value = f"(a_{p_c} != 0)" if p.elem is Elem.BOOL else f"a_{p_c}"
            self._line(f"const {self._ctype(p.elem)} p_{p_c} = {value};",
                       f"{p.name}: {p.elem.value}")
        for a_c, p in self.arrays.values():
            const = "" if p.name in self.written else "const "
            self._line(f"__global {const}{_mem_ctype(p.elem)}* const p_{a_c} = g_{a_c} + o_{a_c};",
                       f"{p.name}: Array[{p.elem.value}]")
        self._builtin_prologue()
        prologue = self.lines
        args = []
        for a_c, p in self.arrays.values():
            self._ctype(p.elem)
            const = "" if p.name in self.written else "const "
            args += [f"__global {const}{_mem_ctype(p.elem)}* g_{a_c}", f"const ulong o_{a_c}",
                     f"const uint n_{a_c}"]
            for d in range(self.dims[p.name]):
                args += [f"const uint shp_{a_c}_{d}", f"const uint str_{a_c}_{d}"]
        for p_c, p in self.scalars.values():
            ctype = "uchar" if p.elem is Elem.BOOL else self._ctype(p.elem)
            args.append(f"const {ctype} a_{p_c}")
        head = [f"// Kernel {_comment(k.name)} lowered by cubecl-opencl "
                f"({self.mode.value}, cube dim {self.dim[0]}x{self.dim[1]}x{self.dim[2]})."]
        for ext in sorted(self.needs):
            if ext == Need.INT64_ATOMICS:
                head.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
                head.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
            else:
                head.append(f"#pragma OPENCL EXTENSION {ext} : enable")
        head.append("")
        for text in self.helpers.defs.values():
            head += [text, ""]
        sig = ",\n    ".join(args) if args else "void"
        head += [
            f"__kernel __attribute__((reqd_work_group_size({self.dim[0]}, {self.dim[1]}, "
            f"{self.dim[2]})))",
            f"void {self.entry}(\n    {sig})",
            "{",
        ]
        return "\n".join([*head, *prologue, *body, "}"]) + "\n"

    def _builtin_prologue(self) -> None:
        B = ir.BuiltinName
        used = set(self.builtins)
        deps = {B.ABSOLUTE_POS: {B.CUBE_POS, B.UNIT_POS}, B.CUBE_POS: set(),
                B.CUBE_COUNT: set(), B.UNIT_POS: set()}
        for name in list(used):
            used |= deps.get(name, set())
        dx, dy, dz = self.dim
        defs: list[tuple[ir.BuiltinName, str]] = [
            (B.UNIT_POS_X, "(uint)get_local_id(0)"), (B.UNIT_POS_Y, "(uint)get_local_id(1)"),
            (B.UNIT_POS_Z, "(uint)get_local_id(2)"),
            (B.CUBE_POS_X, "(uint)get_group_id(0)"), (B.CUBE_POS_Y, "(uint)get_group_id(1)"),
            (B.CUBE_POS_Z, "(uint)get_group_id(2)"),
            (B.CUBE_COUNT_X, "(uint)get_num_groups(0)"),
            (B.CUBE_COUNT_Y, "(uint)get_num_groups(1)"),
            (B.CUBE_COUNT_Z, "(uint)get_num_groups(2)"),
            (B.ABSOLUTE_POS_X, "(uint)get_global_id(0)"),
            (B.ABSOLUTE_POS_Y, "(uint)get_global_id(1)"),
            (B.ABSOLUTE_POS_Z, "(uint)get_global_id(2)"),
            (B.UNIT_POS, f"(uint)get_local_id(0) + (uint)get_local_id(1) * {dx}u"
                         f" + (uint)get_local_id(2) * {dx * dy}u"),
            (B.CUBE_POS, "(uint)get_group_id(0) + (uint)get_num_groups(0) * "
                         "((uint)get_group_id(1) + (uint)get_num_groups(1) * "
                         "(uint)get_group_id(2))"),
            (B.CUBE_COUNT, "(uint)get_num_groups(0) * (uint)get_num_groups(1) * "
                           "(uint)get_num_groups(2)"),
            (B.ABSOLUTE_POS, f"b_CUBE_POS * {dx * dy * dz}u + b_UNIT_POS"),
            (B.PLANE_DIM, "get_sub_group_size()"),
            (B.UNIT_POS_PLANE, "get_sub_group_local_id()"),
        ]
        for name, text in defs:
            if name in used:
                self._line(f"const uint b_{name.value} = {text};")

    # ------------------------------------------------------------ statements

    def _block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self._stmt(s)
            if isinstance(s, (ir.Return, ir.Break, ir.Continue)):
                break  # the rest of the block is unreachable

    def _nested(self, stmts: tuple[ir.Stmt, ...]) -> None:
        self.depth += 1
        self._block(stmts)
        self.depth -= 1

    def _stmt(self, s: ir.Stmt) -> None:
        match s:
            case ir.Assign(name=name, value=value):
                self._line(f"l_{self.locals[name][0]} = {self._expr(value)};",
                           f"{name} = {ir.format_expr(value)}")
            case ir.Store():
                self._store(s)
            case ir.If(cond=cond, then=then, orelse=orelse):
                self._line(f"if {_paren(self._expr(cond))} {{", f"if {ir.format_expr(cond)}:")
                self._nested(then)
                if orelse:
                    self._line("} else {")
                    self._nested(orelse)
                self._line("}")
            case ir.For():
                self._for(s)
            case ir.While(cond=cond, body=body):
                self._line(f"while {_paren(self._expr(cond))} {{",
                           f"while {ir.format_expr(cond)}:")
                self._nested(body)
                self._line("}")
            case ir.Break():
                self._line("break;")
            case ir.Continue():
                self._line("continue;")
            case ir.Return():
                self._line("return;")
            case ir.Barrier():
                self._line(f"barrier({_FENCE});", "sync_cube()")
            case ir.AtomicStmt():
                self._atomic(s)

    def _index(self, e: ir.Expr) -> tuple[str, str]:
        """An index's C text and the unsigned type it is bounds-checked in."""
        ut = "uint" if e.type is Elem.U32 else "ulong"
        text = self._expr(e)
        return (text if e.type in (Elem.U32, Elem.U64) else f"({ut})({text})"), ut

    def _target(self, name: str) -> tuple[str, Elem, str, str]:
        """An array's pointer, element type, length expression and address space."""
        if name in self.shared:
            c, sh = self.shared[name]
            return f"s_{c}", sh.elem, f"{sh.size}u", "local"
        c, p = self.arrays[name]
        return f"p_{c}", p.elem, f"n_{c}", "global"

    def _store(self, s: ir.Store) -> None:
        ptr, elem, n, _ = self._target(s.array)
        idx, ut = self._index(s.index)
        value = self._expr(s.value)
        if elem is Elem.BOOL:
            value = f"(uchar)({value})"
        text = f"{s.array}[{ir.format_expr(s.index)}] = {ir.format_expr(s.value)}"
        if not self.checked:
            self._line(f"{ptr}[{idx}] = {value};", text)
            return
        i = self._temp()
        self._line(f"{{ const {ut} {i} = {idx}; if ({i} < {n}) {ptr}[{i}] = {value}; }}",
                   text)

    def _for(self, s: ir.For) -> None:
        c, loc = self.locals[s.var]
        step = int(s.step.value)
        t = self._ctype(loc.elem)
        k, stop = self._temp(), self._temp()
        header = (f"for {s.var} in range({ir.format_expr(s.start)}, "
                  f"{ir.format_expr(s.stop)}, {step}):")
        self._line(f"{{ const {t} {stop} = {self._expr(s.stop)};", header)
        if s.unroll:
            self._line("#pragma unroll")
        advance = self._wrap(ir.BinOp.ADD, k, _literal(step, loc.elem), loc.elem)
        self._line(f"for ({t} {k} = {self._expr(s.start)}; {k} {'<' if step > 0 else '>'} "
                   f"{stop}; {k} = {advance}) {{")
        self.depth += 1
        self._line(f"l_{c} = {k};")
        self._block(s.body)
        self.depth -= 1
        self._line("} }")

    def _atomic(self, s: ir.AtomicStmt) -> None:
        ptr, elem, n, space = self._target(s.array)
        fn = self._atomic_fn(s.op, elem, space)
        idx, ut = self._index(s.index)
        args = [s.array, ir.format_expr(s.index)]
        args += [ir.format_expr(s.compare)] if s.compare is not None else []
        text = f"atomic_{s.op.value}({', '.join([*args, ir.format_expr(s.value)])})"
        operands = [self._expr(s.value)]
        if s.compare is not None:
            operands.insert(0, self._expr(s.compare))
        result = ""
        if s.result is not None:
            result = f"l_{self.locals[s.result][0]} = "
            text = f"{s.result} = {text}"
        if not self.checked:
            self._line(f"{result}{fn}({ptr} + ({idx}), {', '.join(operands)});", text)
            return
        i = self._temp()
        call = f"{fn}({ptr} + {i}, {', '.join(operands)})"
        if result:
            zero = _literal(0, elem)
            self._line(f"{{ const {ut} {i} = {idx}; {result}{i} < {n} ? {call} : {zero}; }}",
                       text)
        else:
            self._line(f"{{ const {ut} {i} = {idx}; if ({i} < {n}) {call}; }}", text)

    def _atomic_fn(self, op: ir.AtomicOp, elem: Elem, space: str) -> str:
        """The function performing ``op`` on one ``elem`` in ``space``: a built-in, or
        a helper this program defines."""
        native32 = {ir.AtomicOp.ADD: "atomic_add", ir.AtomicOp.SUB: "atomic_sub",
                    ir.AtomicOp.MAX: "atomic_max", ir.AtomicOp.MIN: "atomic_min",
                    ir.AtomicOp.EXCHANGE: "atomic_xchg",
                    ir.AtomicOp.COMPARE_EXCHANGE: "atomic_cmpxchg"}
        if elem in (Elem.I32, Elem.U32):
            return native32[op]
        if elem.is_int:
            self.needs.add(Need.INT64_ATOMICS)
            return native32[op].replace("atomic_", "atom_")
        # f32 add, the one atomic on floats: a compare-exchange loop on the bits.
        name = f"cc_atomic_add_f32_{space}"
        return self.helpers.use(name, "\n".join([
            f"static float {name}(volatile __{space} float* p, float v) {{",
            f"    volatile __{space} uint* q = (volatile __{space} uint*)p;",
            "    uint old = *q, assumed;",
            "    do {",
            "        assumed = old;",
            "        old = atomic_cmpxchg(q, assumed, as_uint(as_float(assumed) + v));",
            "    } while (old != assumed);",
            "    return as_float(old);",
            "}",
        ]))

    # ------------------------------------------------------------ expressions

    def _expr(self, e: ir.Expr) -> str:
        """OpenCL C for ``e``, parenthesised where precedence could matter."""
        match e:
            case ir.Const(value=v, type=t):
                self._ctype(t)
                return _literal(v, t)
            case ir.Var(name=n):
                if n in self.locals:
                    return f"l_{self.locals[n][0]}"
                return f"p_{self.scalars[n][0]}"
            case ir.Builtin(name=n):
                if n in (ir.BuiltinName.PLANE_DIM, ir.BuiltinName.UNIT_POS_PLANE):
                    self.needs.add(Need.SUBGROUPS)
                if n in (ir.BuiltinName.CUBE_DIM_X, ir.BuiltinName.CUBE_DIM_Y,
                         ir.BuiltinName.CUBE_DIM_Z, ir.BuiltinName.CUBE_DIM):
                    return self._cube_dim(n)
                self.builtins.add(n)
                return f"b_{n.value}"
            case ir.Binary():
                return self._binary(e)
            case ir.Unary():
                return self._unary(e)
            case ir.Math():
                return self._math(e)
            case ir.Cast(x=x, type=t):
                return self._cast(x, t)
            case ir.Select(cond=c, a=a, b=b):
                return f"({self._expr(c)} ? {self._expr(a)} : {self._expr(b)})"
            case ir.Load():
                return self._load(e)
            case ir.Len(array=a):
                return f"n_{self.arrays[a][0]}"
            case ir.Shape(array=a, dim=d):
                return f"shp_{self.arrays[a][0]}_{d}"
            case ir.Stride(array=a, dim=d):
                return f"str_{self.arrays[a][0]}_{d}"
            case ir.PlaneOp():
                return self._plane(e)

    def _cube_dim(self, n: ir.BuiltinName) -> str:
        dx, dy, dz = self.dim
        value = {ir.BuiltinName.CUBE_DIM_X: dx, ir.BuiltinName.CUBE_DIM_Y: dy,
                 ir.BuiltinName.CUBE_DIM_Z: dz, ir.BuiltinName.CUBE_DIM: dx * dy * dz}[n]
        return f"{value}u"  # fixed by reqd_work_group_size

    def _load(self, e: ir.Load) -> str:
        ptr, elem, n, space = self._target(e.array)
        idx, ut = self._index(e.index)
        if not self.checked:
            value = f"{ptr}[{idx}]"
        else:
            mem = _mem_ctype(elem)
            self._ctype(elem)
            name = f"cc_load_{elem.value}_{space}_{ut}"
            const = "const " if space == "global" else ""
            fn = self.helpers.use(name, "\n".join([
                f"static {mem} {name}(__{space} {const}{mem}* a, {ut} n, {ut} i) {{",
                f"    return i < n ? a[i] : ({mem})0;  // checked: outside reads 0",
                "}",
            ]))
            value = f"{fn}({ptr}, {n}, {idx})"
        return f"({value} != 0)" if elem is Elem.BOOL else value

    def _wrap(self, op: ir.BinOp, a: str, b: str, t: Elem) -> str:
        """``a op b`` in ``t`` with two's complement wrapping, for + - * and <<."""
        sym = "<<" if op is ir.BinOp.SHL else _ARITH[op]
        if t.is_signed:
            u = _CTYPE[_UNSIGNED[t]]
            return f"as_{_CTYPE[t]}(as_{u}({a}) {sym} as_{u}({b}))"
        return f"({a} {sym} {b})"

    def _binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.lhs.type
        a, b = self._expr(e.lhs), self._expr(e.rhs)
        if op in _COMPARE:
            return f"({a} {_COMPARE[op]} {b})"
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            # C's short circuit is the IR's: the right side runs only where it decides.
            return f"({a} {'&&' if op is ir.BinOp.AND else '||'} {b})"
        if op in _BITWISE:
            text = f"({a} {_BITWISE[op]} {b})"
            return f"((bool){text})" if t is Elem.BOOL else text
        if op in _ARITH:
            return self._wrap(op, a, b, t) if t.is_int else f"({a} {_ARITH[op]} {b})"
        if op is ir.BinOp.DIV:
            return f"({a} / {b})"
        if op in (ir.BinOp.IDIV, ir.BinOp.REM):
            if t.is_float:
                return f"trunc({a} / {b})" if op is ir.BinOp.IDIV else f"fmod({a}, {b})"
            return f"{self._divide_fn(op, t)}({a}, {b})"
        # SHL or SHR, the operators left.
        amount = f"({b} & {_literal(t.bits - 1, t)})"
        if op is ir.BinOp.SHL:
            return self._wrap(op, a, amount, t)
        return f"({a} >> {amount})"  # arithmetic on signed types, as OpenCL C says

    def _divide_fn(self, op: ir.BinOp, t: Elem) -> str:
        """A helper for integer ``//`` or ``%`` that never traps: x / 0 and x % 0 are 0,
        and MIN / -1 wraps to MIN."""
        c = _CTYPE[t]
        name = f"cc_{'idiv' if op is ir.BinOp.IDIV else 'rem'}_{t.value}"
        sym = "/" if op is ir.BinOp.IDIV else "%"
        if t.is_signed:
            # The divisor is never 0 or -1 where C divides, so nothing is undefined.
            u = _CTYPE[_UNSIGNED[t]]
            special = f"as_{c}(({u})0 - as_{u}(a))" if op is ir.BinOp.IDIV else f"({c})0"
            body = [
                f"    const {c} d = (b == 0 || b == -1) ? ({c})1 : b;",
                f"    return b == 0 ? ({c})0 : b == -1 ? {special} : a {sym} d;",
            ]
        else:
            body = [
                f"    const {c} d = b == 0 ? ({c})1 : b;",
                f"    return b == 0 ? ({c})0 : a {sym} d;",
            ]
        return self.helpers.use(name, "\n".join(
            [f"static {c} {name}({c} a, {c} b) {{", *body, "}"]))

    def _unary(self, e: ir.Unary) -> str:
        t, x = e.x.type, self._expr(e.x)
        if e.op is ir.UnOp.NEG:
            if t.is_int:
                return self._wrap(ir.BinOp.SUB, _literal(0, t), x, t)
            return f"(-{x})"
        # NOT, or BITNOT: ! on bools, ~ on integers.
        return f"(!{x})" if t is Elem.BOOL else f"(~{x})"

    def _math(self, e: ir.Math) -> str:
        fn, t = e.fn, e.args[0].type
        xs = [self._expr(a) for a in e.args]
        if fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF):
            # Scalar isnan/isinf return int; integers are never NaN or infinite.
            return f"((bool){fn.value}({xs[0]}))" if t.is_float else "false"
        if t.is_int:
            if fn is ir.MathFn.ABS:
                if not t.is_signed:
                    return xs[0]
                return f"as_{_CTYPE[t]}(abs({xs[0]}))"  # abs returns the unsigned type
            if fn is ir.MathFn.MIN or fn is ir.MathFn.MAX:
                return f"{fn.value}({xs[0]}, {xs[1]})"
            return f"min(max({xs[0]}, {xs[1]}), {xs[2]})"  # CLAMP, the one left on integers
        if fn is ir.MathFn.CLAMP:
            return f"fmin(fmax({xs[0]}, {xs[1]}), {xs[2]})"
        if fn is ir.MathFn.RSQRT:
            return f"({_literal(1.0, t)} / sqrt({xs[0]}))"
        return f"{_FLOAT_FNS[fn]}({', '.join(xs)})"

    def _cast(self, x: ir.Expr, t: Elem) -> str:
        s = x.type
        v = self._expr(x)
        if s is t:
            return v
        ct = self._ctype(t)
        if t is Elem.BOOL:
            return f"({v} != 0)"
        if s is Elem.BOOL or t.is_float:
            return f"(({ct})({v}))"  # bool is 0/1; int and float to float round to nearest
        if s.is_float:
            return f"convert_{ct}_sat({v})"  # saturating, NaN -> 0: defined where C is not
        # Integer to integer: modulo 2^bits, spelled so no conversion is out of range.
        if not t.is_signed:
            return f"(({ct})({v}))"
        if t.bits > s.bits:
            return f"(({ct})({v}))"  # widening keeps the value
        return f"as_{ct}(({_CTYPE[_UNSIGNED[t]]})({v}))"

    def _plane(self, e: ir.PlaneOp) -> str:
        self.needs.add(Need.SUBGROUPS)
        if e.type is Elem.BOOL:
            self._fail(f"plane_{e.fn.value} of bool needs a subgroup broadcast of bool, "
                       "which cl_khr_subgroups lacks")
        v = self._expr(e.value)
        if e.lane is not None:  # BROADCAST, the one plane function with a lane
            return f"sub_group_broadcast({v}, (uint)({self._expr(e.lane)}))"
        if e.fn is ir.PlaneFn.SUM:
            return f"sub_group_reduce_add({v})"
        return f"sub_group_reduce_max({v})"
