"""The ``cuda`` backend's Compiler: an IR kernel -> one CUDA C++ translation unit.

The unit is the :data:`~cubecl_cuda.prelude.PRELUDE` followed by one
``extern "C" __global__`` function, the entry point, whose parameters are, in order
(:class:`Param` records each for the launch):

- one pointer per array parameter (``T*``), in the kernel's order;
- one value per scalar parameter, in order (``f16`` passed as its ``u16`` bits and
  ``bool`` as a ``u8``, so no launcher has to know how to pack those types);
- the metadata the body reads, each a ``u32``: the length (elements) of every array
  that ``len()`` reads or that checked mode bounds, then each ``shape``/``stride``
  the body reads, per (array, dim). Shapes and strides past an array's rank are 1.

Semantics are those of ``cubecl_server/ir.py``; where C++ differs the prelude's
helpers carry the IR's meaning (see :mod:`cubecl_cuda.prelude`). Execution model:

- one IR unit is one CUDA thread, a cube is a block (the cube dim is compiled in as
  ``__launch_bounds__`` and as the constants ``CUBE_DIM*``), the cube count the grid;
  builtins are linearised x fastest, as :class:`ir.BuiltinName` says, from
  ``threadIdx``/``blockIdx``/``gridDim``; a plane is a warp (32 units);
- locals are declared once at the top, zero-initialised; shared arrays are
  ``__shared__``, zeroed by the cube before the body runs (then ``__syncthreads``),
  so a cube reads 0 from any element it has not written, as on the reference backend;
- ``for`` evaluates its bounds once and steps a hidden counter, so assigning the
  loop variable in the body does not change the trip count and the variable keeps
  its last value; both sides of ``select`` are evaluated, while ``and``/``or`` are
  ``&&``/``||``: their right side only where the left does not decide, as the IR says;
- checked mode: a load outside an array (or a shared array) reads 0, a store or an
  atomic outside it does nothing (an atomic's result is then 0); a stored value is
  evaluated before the check, so plane operations in it see every active unit.

Names are prefixed by what they are (``p_`` parameters, ``l_`` locals, ``sh_``
shared arrays, ``len_``/``shape_``/``stride_`` metadata, ``b_`` builtins, ``t_``
temporaries, ``cc_`` helpers), which keeps every user name clear of C++ keywords,
CUDA's built-in names and the helpers; characters C++ does not allow become ``_``.

The IR has passed the core's :func:`cubecl_server.ir_check.check_kernel` before it
gets here, so no rule of ``docs/ir.md`` is checked again; what is refused is what CUDA
lacks (a block of more than :data:`MAX_CUBE_DIM` threads).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from cubecl_cuda.prelude import PLANE_SIZE, PRELUDE
from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeDim

__all__ = ["CudaCompiler", "KernelRepr", "Param", "MAX_CUBE_DIM", "CTYPES"]

BACKEND = "cuda"
MAX_CUBE_DIM = 1024
"""Most threads a CUDA block may have, on every architecture."""

CTYPES = {
    ir.Elem.F16: "__half", ir.Elem.F32: "float", ir.Elem.F64: "double",
    ir.Elem.I32: "int", ir.Elem.I64: "long long", ir.Elem.U32: "unsigned int",
    ir.Elem.U64: "unsigned long long", ir.Elem.BOOL: "bool",
}
"""The C++ type of each IR element type."""

# How a scalar parameter crosses the launch when its C++ type is awkward to pack.
_SCALAR_WIRE = {ir.Elem.F16: ("unsigned short", "uint16"),
                ir.Elem.BOOL: ("unsigned char", "uint8")}
_COMPARE = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
            ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
_BITWISE = {ir.BinOp.BITAND: "&", ir.BinOp.BITOR: "|", ir.BinOp.BITXOR: "^"}
_SIGNED_HELPER = {ir.BinOp.ADD: "cc_add", ir.BinOp.SUB: "cc_sub", ir.BinOp.MUL: "cc_mul"}
_HALF_FROM = {ir.Elem.F32: "__float2half_rn", ir.Elem.F64: "__double2half",
              ir.Elem.I32: "__int2half_rn", ir.Elem.I64: "__ll2half_rn",
              ir.Elem.U32: "__uint2half_rn", ir.Elem.U64: "__ull2half_rn"}
_HALF_TO = {ir.Elem.I32: "__half2int_rz", ir.Elem.I64: "__half2ll_rz",
            ir.Elem.U32: "__half2uint_rz", ir.Elem.U64: "__half2ull_rz"}
_LITERAL_SUFFIX = {ir.Elem.I32: "", ir.Elem.I64: "ll", ir.Elem.U32: "u", ir.Elem.U64: "ull"}


@dataclass(frozen=True)
class Param:
    """One parameter of the entry point, as the launch fills it.

    ``kind`` is ``"array"`` (a device pointer to array parameter ``index``),
    ``"scalar"`` (scalar parameter ``index``), or ``"len"``, ``"shape"``, ``"stride"``
    (a ``u32`` of array parameter ``index``, along ``dim`` for the last two). ``wire``
    is the NumPy dtype the launch sends the value as (``uint64`` for a pointer).
    """

    kind: str
    index: int
    wire: str = "uint32"
    dim: int = 0

    def to_json(self) -> list[str | int]:
        """The compact form an artifact header keeps."""
        return [self.kind, self.index, self.wire, self.dim]

    @classmethod
    def from_json(cls, value: list[str | int]) -> Param:
        """The inverse of :meth:`to_json`."""
        kind, index, wire, dim = value
        return cls(str(kind), int(index), str(wire), int(dim))


@dataclass(frozen=True)
class KernelRepr:
    """What the Compiler keeps beside the source: the entry point's parameters."""

    params: tuple[Param, ...]
    cube_dim: tuple[int, int, int]


class CudaCompiler:
    """The ``cuda`` backend's Compiler: IR -> CUDA C++ source for NVRTC."""

    extension = "cu"

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` (checked IR) for blocks of ``cube_dim`` threads in ``mode``.

        Raise ``CompilationError`` for a cube dim larger than a CUDA block.
        """
        emitter = _Emitter(kernel, cube_dim, mode)
        source = emitter.unit()
        return CompiledKernel(name=kernel.name, entry_point=emitter.entry, source=source,
                              extension=self.extension,
                              repr=KernelRepr(tuple(emitter.layout),
                                              (cube_dim.x, cube_dim.y, cube_dim.z)))


def _ident(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def _float_literal(value: float, elem: ir.Elem) -> str:
    """An exact literal: hexadecimal floats for finite values, bit patterns otherwise."""
    if elem is ir.Elem.F16:
        bits = int(np.array(value, dtype=np.float16).view(np.uint16))
        return f"__ushort_as_half((unsigned short)0x{bits:04x}u)"
    if elem is ir.Elem.F32:
        v32 = float(np.float32(value))
        if math.isfinite(v32):
            return f"{v32.hex()}f"
        (bits,) = struct.unpack("<I", struct.pack("<f", v32))
        return f"__uint_as_float(0x{bits:08x}u)"
    if math.isfinite(value):
        return value.hex()
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return f"__longlong_as_double((long long)0x{bits:016x}ull)"


def _literal(value: int | float | bool, elem: ir.Elem) -> str:
    """A C++ constant of exactly ``elem`` (integers wrap into the type's range)."""
    if elem is ir.Elem.BOOL:
        return "true" if value else "false"
    if elem.is_float:
        return _float_literal(float(value), elem)
    v = int(value) & ((1 << elem.bits) - 1)
    if not elem.is_signed:
        return f"{v}{_LITERAL_SUFFIX[elem]}"
    if v == 1 << (elem.bits - 1):
        # A negative literal is "-" applied to a positive one, and the most negative
        # value has no positive counterpart: spell it through its unsigned bits.
        unsigned = ir.Elem.U32 if elem is ir.Elem.I32 else ir.Elem.U64
        return f"(({CTYPES[elem]}){v}{_LITERAL_SUFFIX[unsigned]})"
    if v > 1 << (elem.bits - 1):
        return f"(-{(1 << elem.bits) - v}{_LITERAL_SUFFIX[elem]})"
    return f"{v}{_LITERAL_SUFFIX[elem]}"


class _Emitter:
    """Writes one kernel's translation unit; a visitor over statements and expressions."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> None:
        self.k = kernel
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.mode = mode
        self.checked = mode is ExecutionMode.CHECKED
        if cube_dim.total > MAX_CUBE_DIM:
            self._fail(f"cube dim {self.dim} has {cube_dim.total} units; a CUDA block "
                       f"has at most {MAX_CUBE_DIM}")
        self.entry = "cubecl_" + _ident(kernel.name)
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.taken: set[str] = set()
        self.arrays: dict[str, tuple[str, ir.Param, int]] = {}
        self.scalars: dict[str, tuple[str, ir.Param, int]] = {}
        self.locals: dict[str, tuple[str, ir.Local]] = {}
        self.shared: dict[str, tuple[str, ir.SharedArray]] = {}
        self.builtins: set[ir.BuiltinName] = set()
        self.meta: dict[tuple[str, str, int], str] = {}
        self.layout: list[Param] = []
        for p in kernel.params:
            table = self.arrays if p.array else self.scalars
            table[p.name] = (self._name("p_", p.name), p, len(table))
        for loc in kernel.locals:
            self.locals[loc.name] = (self._name("l_", loc.name), loc)
        # The device's limit on shared memory (48 KiB of static shared memory per
        # block) is NVRTC's to enforce, in its log.
        for sh in kernel.shared:
            self.shared[sh.name] = (self._name("sh_", sh.name), sh)

    # ------------------------------------------------------------ plumbing

    def _fail(self, message: str) -> NoReturn:
        raise CompilationError(message, kernel=self.k.name, backend=BACKEND)

    def _name(self, prefix: str, name: str) -> str:
        base = prefix + _ident(name)
        out, i = base, 1
        while out in self.taken:
            i += 1
            out = f"{base}_{i}"
        self.taken.add(out)
        return out

    def _temp(self) -> str:
        self.temps += 1
        return f"t_{self.temps}"

    def _line(self, text: str, comment: str = "") -> None:
        pad = "  " * self.depth
        note = f"  // {' '.join(comment.split())}" if comment else ""
        self.lines.append(pad + text + note)

    def _meta(self, kind: str, array: str, dim: int = 0) -> str:
        """The entry-point parameter holding one piece of an array's metadata."""
        index = self.arrays[array][2]
        key = (kind, array, dim)
        if key not in self.meta:
            suffix = "" if kind == "len" else f"_{dim}"
            self.meta[key] = self._name(f"{kind}_", array + suffix)
            self.layout.append(Param(kind, index, "uint32", dim))
        return self.meta[key]

    # ------------------------------------------------------------ the unit

    def unit(self) -> str:
        """The whole translation unit: prelude, then the entry point."""
        self._block(self.k.body)
        body = self.lines
        self.lines = []
        self.depth = 1
        if self.shared:
            self.builtins.add(ir.BuiltinName.UNIT_POS)  # the zeroing loop's start
        for name in sorted(self.builtins, key=lambda b: b.value):
            self._line(f"const unsigned int b_{name.value.lower()} = {self._builtin(name)};")
        for py, p, _ in self.scalars.values():
            if p.elem in _SCALAR_WIRE:
                convert = ("__ushort_as_half(" if p.elem is ir.Elem.F16 else "(0u != ")
                self._line(f"const {CTYPES[p.elem]} {py} = {convert}{py}_wire);")
        for py, loc in self.locals.values():
            self._line(f"{CTYPES[loc.elem]} {py} = {_literal(0, loc.elem)};",
                       f"var {loc.name}: {loc.elem.value}")
        if self.shared:
            self._shared_decls()
        params = [f"{CTYPES[p.elem]}* {py}" for py, p, _ in self.arrays.values()]
        for py, p, _ in self.scalars.values():
            wire = _SCALAR_WIRE.get(p.elem)
            params.append(f"{wire[0]} {py}_wire" if wire else f"{CTYPES[p.elem]} {py}")
        params += [f"unsigned int {name}" for name in self.meta.values()]
        self.layout[:0] = (
            [Param("array", i, "uint64") for _, _, i in self.arrays.values()]
            + [Param("scalar", i, _SCALAR_WIRE.get(p.elem, (None, p.elem.numpy_name))[1])
               for _, p, i in self.scalars.values()])
        dims = ", ".join(map(str, self.dim))
        head = [
            f"// Kernel {self.k.name!r} lowered by cubecl-cuda ({self.mode.value}, "
            f"cube dim ({dims})).",
            PRELUDE,
            f'extern "C" __global__ void __launch_bounds__({math.prod(self.dim)})',
            f"{self.entry}({', '.join(params)}) {{",
        ]
        return "\n".join([*head, *self.lines, *body, "}"]) + "\n"

    def _shared_decls(self) -> None:
        total = math.prod(self.dim)
        for py, sh in self.shared.values():
            size = max(sh.size, 1)  # C++ has no zero-length arrays; nothing reads it
            self._line(f"__shared__ {CTYPES[sh.elem]} {py}[{size}];",
                       f"shared {sh.name}: {sh.elem.value}[{sh.size}]")
            if sh.size:
                self._line(f"for (unsigned int t_z = b_unit_pos; t_z < {sh.size}u; "
                           f"t_z += {total}u) {py}[t_z] = {_literal(0, sh.elem)};")
        self._line("__syncthreads();", "shared memory starts zeroed")

    # ------------------------------------------------------------ builtins

    def _builtin(self, name: ir.BuiltinName) -> str:
        dx, dy, dz = self.dim
        b = ir.BuiltinName
        simple = {
            b.UNIT_POS_X: "threadIdx.x", b.UNIT_POS_Y: "threadIdx.y", b.UNIT_POS_Z: "threadIdx.z",
            b.CUBE_POS_X: "blockIdx.x", b.CUBE_POS_Y: "blockIdx.y", b.CUBE_POS_Z: "blockIdx.z",
            b.CUBE_DIM_X: f"{dx}u", b.CUBE_DIM_Y: f"{dy}u", b.CUBE_DIM_Z: f"{dz}u",
            b.CUBE_DIM: f"{dx * dy * dz}u",
            b.CUBE_COUNT_X: "gridDim.x", b.CUBE_COUNT_Y: "gridDim.y", b.CUBE_COUNT_Z: "gridDim.z",
            b.CUBE_COUNT: "(gridDim.x * gridDim.y * gridDim.z)",
            b.PLANE_DIM: f"{PLANE_SIZE}u",
            b.CUBE_POS: "(blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x "
                        "* gridDim.y)",
            b.ABSOLUTE_POS_X: f"(blockIdx.x * {dx}u + threadIdx.x)",
            b.ABSOLUTE_POS_Y: f"(blockIdx.y * {dy}u + threadIdx.y)",
            b.ABSOLUTE_POS_Z: f"(blockIdx.z * {dz}u + threadIdx.z)",
        }
        if name in simple:
            return simple[name]
        unit = ("threadIdx.x" if dy == dz == 1 else
                f"(threadIdx.x + threadIdx.y * {dx}u + threadIdx.z * {dx * dy}u)")
        if name is b.UNIT_POS:
            return unit
        if name is b.UNIT_POS_PLANE:
            # Warps are cut from the block's linear thread index, x fastest.
            return f"({unit} & {PLANE_SIZE - 1}u)"
        return f"({simple[b.CUBE_POS]} * {dx * dy * dz}u + {unit})"  # ABSOLUTE_POS, the one left

    # ------------------------------------------------------------ statements

    def _block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self._stmt(s)
            if isinstance(s, (ir.Return, ir.Break, ir.Continue)):
                break  # the rest of the block is unreachable

    def _stmt(self, s: ir.Stmt) -> None:
        match s:
            case ir.Assign(name=name, value=value):
                self._line(f"{self.locals[name][0]} = {self._expr(value)};",
                           f"{name} = {ir.format_expr(value)}")
            case ir.Store():
                self._store(s)
            case ir.If(cond=cond, then=then, orelse=orelse):
                self._line(f"if ({self._expr(cond)}) {{")
                self._nested(then)
                if orelse:
                    self._line("} else {")
                    self._nested(orelse)
                self._line("}")
            case ir.For():
                self._for(s)
            case ir.While(cond=cond, body=body):
                self._line(f"while ({self._expr(cond)}) {{")
                self._nested(body)
                self._line("}")
            case ir.Break() | ir.Continue():
                self._line(f"{type(s).__name__.lower()};")
            case ir.Return():
                self._line("return;")
            case ir.Barrier():
                self._line("__syncthreads();")
            case ir.AtomicStmt():
                self._atomic(s)

    def _nested(self, body: tuple[ir.Stmt, ...]) -> None:
        self.depth += 1
        self._block(body)
        self.depth -= 1

    def _for(self, s: ir.For) -> None:
        py, loc = self.locals[s.var]
        step = int(s.step.value)
        t = CTYPES[loc.elem]
        k, stop = self._temp(), self._temp()
        if loc.elem.is_signed:
            advance = f"{k} = cc_add({k}, {_literal(step, loc.elem)})"
        elif step > 0:
            advance = f"{k} += {_literal(step, loc.elem)}"
        else:
            advance = f"{k} -= {_literal(-step, loc.elem)}"
        header = (f"for {s.var} in range({ir.format_expr(s.start)}, "
                  f"{ir.format_expr(s.stop)}, {step})")
        self._line(f"{{ {t} {k} = {self._expr(s.start)}; const {t} {stop} = "
                   f"{self._expr(s.stop)};", header)
        if s.unroll:
            self._line("#pragma unroll")
        self._line(f"for (; {k} {'<' if step > 0 else '>'} {stop}; {advance}) {{")
        self.depth += 1
        self._line(f"{py} = {k};")
        self._block(s.body)
        self.depth -= 1
        self._line("} }")

    def _target(self, array: str) -> tuple[str, ir.Elem, str]:
        """A global or shared array's C++ name, element type and bound."""
        if array in self.shared:
            py, decl = self.shared[array]
            return py, decl.elem, f"{decl.size}u" if self.checked else ""
        py, p, _ = self.arrays[array]
        bound = self._meta("len", array) if self.checked else ""
        return py, p.elem, bound

    def _store(self, s: ir.Store) -> None:
        arr, elem, bound = self._target(s.array)
        text = f"{s.array}[{ir.format_expr(s.index)}] = {ir.format_expr(s.value)}"
        idx, val = self._expr(s.index), self._expr(s.value)
        if not self.checked:
            self._line(f"{arr}[{idx}] = {val};", text)
            return
        ti, tv = self._temp(), self._temp()
        self._line(f"{{ const {CTYPES[s.index.type]} {ti} = {idx}; const {CTYPES[elem]} {tv} = "
                   f"{val}; if (cc_in({ti}, {bound})) {arr}[{ti}] = {tv}; }}", text)

    def _atomic(self, s: ir.AtomicStmt) -> None:
        arr, elem, bound = self._target(s.array)
        args = [self._expr(s.value)]
        if s.compare is not None:
            args.insert(0, self._expr(s.compare))
        fields = [s.array, ir.format_expr(s.index)]
        fields += [ir.format_expr(s.compare)] if s.compare is not None else []
        text = f"atomic_{s.op.value}({', '.join([*fields, ir.format_expr(s.value)])})"
        target = ""
        if s.result is not None:
            target = f"{self.locals[s.result][0]} = "
            text = f"{s.result} = {text}"
        ti = self._temp()
        call = f"cc_atomic_{s.op.value}(&{arr}[{ti}], {', '.join(args)})"
        head = f"{{ const {CTYPES[s.index.type]} {ti} = {self._expr(s.index)}; "
        if not bound:
            self._line(f"{head}{target}{call}; }}", text)
        elif target:
            self._line(f"{head}{target}cc_in({ti}, {bound}) ? {call} : "
                       f"{_literal(0, elem)}; }}", text)
        else:
            self._line(f"{head}if (cc_in({ti}, {bound})) {call}; }}", text)

    # ------------------------------------------------------------ expressions

    def _expr(self, e: ir.Expr) -> str:
        """C++ for ``e``: fully parenthesised, of exactly the IR's type."""
        match e:
            case ir.Const(value=v, type=t):
                return _literal(v, t)
            case ir.Var(name=n):
                if n in self.locals:
                    return self.locals[n][0]
                return self.scalars[n][0]
            case ir.Builtin(name=n):
                self.builtins.add(n)
                return f"b_{n.value.lower()}"
            case ir.Binary():
                return self._binary(e)
            case ir.Unary():
                return self._unary(e)
            case ir.Math():
                return self._math(e)
            case ir.Cast(x=x, type=t):
                return self._cast(self._expr(x), x.type, t)
            case ir.Select(cond=c, a=a, b=b):
                return f"cc_select({self._expr(c)}, {self._expr(a)}, {self._expr(b)})"
            case ir.Load(array=a, index=i):
                arr, _, bound = self._target(a)
                if bound:
                    return f"cc_load({arr}, {self._expr(i)}, {bound})"
                return f"{arr}[{self._expr(i)}]"
            case ir.Len(array=a):
                return self._meta("len", a)
            case ir.Shape(array=a, dim=d):
                return self._meta("shape", a, d)
            case ir.Stride(array=a, dim=d):
                return self._meta("stride", a, d)
            case ir.PlaneOp():
                return self._plane(e)

    def _binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.lhs.type
        a, b = self._expr(e.lhs), self._expr(e.rhs)
        if op in _COMPARE:
            return f"({a} {_COMPARE[op]} {b})"
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            # C++'s short circuit is the IR's: the right side runs only where it decides.
            return f"({a} {'&&' if op is ir.BinOp.AND else '||'} {b})"
        if op in _BITWISE:
            text = f"({a} {_BITWISE[op]} {b})"
            return f"((bool){text})" if t is ir.Elem.BOOL else text
        if op in _SIGNED_HELPER:
            if t.is_signed:
                return f"{_SIGNED_HELPER[op]}({a}, {b})"
            return f"({a} {op.value} {b})"
        if op is ir.BinOp.DIV:
            return f"({a} / {b})"
        if op is ir.BinOp.IDIV:
            return f"cc_idiv({a}, {b})"
        if op is ir.BinOp.REM:
            return f"cc_rem({a}, {b})"
        return f"cc_{op.name.lower()}({a}, {b})"  # SHL or SHR, the operators left

    def _unary(self, e: ir.Unary) -> str:
        t, x = e.x.type, self._expr(e.x)
        if e.op is ir.UnOp.NEG:
            if t.is_signed:
                return f"cc_neg({x})"
            return f"({_literal(0, t)} - {x})" if t.is_int else f"(-{x})"
        # NOT, or BITNOT: ~ on a C++ bool promotes to int (~true == -2, still true),
        # so bools take !.
        return f"(!{x})" if t is ir.Elem.BOOL else f"(~{x})"

    def _math(self, e: ir.Math) -> str:
        xs = [self._expr(a) for a in e.args]
        if e.fn is ir.MathFn.CLAMP:
            return f"cc_min(cc_max({xs[0]}, {xs[1]}), {xs[2]})"
        return f"cc_{e.fn.value}({', '.join(xs)})"

    def _cast(self, x: str, src: ir.Elem, dst: ir.Elem) -> str:
        if src is dst:
            return x
        if dst is ir.Elem.F16:
            if src is ir.Elem.BOOL:
                return f"__float2half_rn((float){x})"
            return f"{_HALF_FROM[src]}({x})"
        if src is ir.Elem.F16:
            if dst in _HALF_TO:
                return f"{_HALF_TO[dst]}({x})"
            if dst is ir.Elem.BOOL:
                return f"(__half2float({x}) != 0.0f)"
            return f"(({CTYPES[dst]})__half2float({x}))"
        return f"(({CTYPES[dst]}){x})"

    def _plane(self, e: ir.PlaneOp) -> str:
        v = self._expr(e.value)
        if e.lane is not None:  # BROADCAST, the one plane function with a lane
            return f"cc_plane_broadcast({v}, {self._expr(e.lane)})"
        return f"cc_plane_{e.fn.value}({v})"
