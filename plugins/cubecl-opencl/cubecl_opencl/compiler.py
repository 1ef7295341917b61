"""The ``opencl`` backend's Compiler: IR -> OpenCL C 1.2 source, through the core's
C-family emitter (:class:`cubecl_server.backend.lowering.CEmitter`) with the dialect here.

The generated program holds one ``__kernel`` (the entry point, ``k_<name>``) with
``__attribute__((reqd_work_group_size(X, Y, Z)))`` from the cube dim, preceded by
the helper functions it uses (``cc_*``). It is device-independent; the features it
needs (:attr:`KernelLayout.needs`) are checked against the device before it is
built (:mod:`cubecl_opencl.artifact`). The one refusal left here is a plane operation
on bool, which subgroups lack.

Kernel arguments (the launch protocol, :class:`KernelLayout`): array parameters
first, in parameter order, each as

- ``__global T* g_<a>``: the storage buffer (a pool page or a dedicated allocation),
- ``ulong o_<a>``: the slice's offset in that buffer, in elements (slices are
  never sub-buffers: offsets are arguments, so a launch creates no CL objects),
- ``uint len_<a>``: the elements of its buffer (``buffer_len``, and the bound of
  checked mode); of a view, from its first element to its last,
- ``uint n_<a>``, ``uint rank_<a>``: its logical length (``len``) and rank, where the
  kernel reads them,
- ``uint shape_<a>_<d>``, ``uint stride_<a>_<d>`` for ``d < dims``, where ``dims`` is
  one more than the largest axis the kernel reads with ``Shape``/``Stride`` (the
  server passes 1 past the array's rank, as ``ir.Shape`` says);

then the scalar parameters in order, by value (``bool`` as ``uchar``, since a
kernel argument cannot be ``bool``). Everything is a plain argument: no metadata
buffer is written per launch.

What the dialect chooses where the emitter leaves it open:

- ``bool`` is ``bool`` in registers and ``uchar`` in memory.
- Signed arithmetic goes through the unsigned type with ``as_<type>`` bit casts.
- ``/`` and ``sqrt`` on ``f32`` are correctly rounded (build option
  ``-cl-fp32-correctly-rounded-divide-sqrt``), as NumPy's are; ``rsqrt`` is
  ``1 / sqrt(x)`` for the same reason.
- Float to integer casts saturate and map NaN to 0 (``convert_<T>_sat``, rounding
  toward zero): C leaves out-of-range conversions undefined, so this is the defined
  behaviour the backend chooses. Integer to integer casts wrap.
- ``Barrier`` is ``barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)``, ``SyncPlane``
  ``sub_group_barrier`` with the same fences (``cl_khr_subgroups``).
- Atomics: ``i32``/``u32`` through the OpenCL 1.1 ``atomic_*`` built-ins;
  ``i64``/``u64`` through ``atom_*`` (``cl_khr_int64_base_atomics``, and
  ``..._extended_atomics`` for min/max); OpenCL 1.2 has no float atomic, so the
  core's passes make those compare-exchange loops on the bits.
- Planes are subgroups (``cl_khr_subgroups``): ``sub_group_reduce_add``,
  ``sub_group_reduce_max`` and ``sub_group_broadcast``, whose lane must be the same
  across the plane (OpenCL requires it), and which every unit of the plane must reach.
- ``unroll`` becomes ``#pragma unroll``.
- Lines are OpenCL C's vectors (``float4``, ``uint8``...: sizes 2, 4, 8 and 16), read
  and written whole with ``vloadN``/``vstoreN``; a line of bools, which OpenCL C has no
  vector for, is the emitter's struct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cubecl_server import ir
from cubecl_server.backend import CompiledKernel, CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import UNSIGNED, ArrayRef, CEmitter, Native, StandardC

from . import BACKEND

__all__ = ["OpenclCompiler", "KernelLayout", "ArrayArg", "ScalarArg", "Need"]

Elem = ir.Elem
B = ir.BuiltinName

_ATOMICS = {ir.AtomicOp.ADD: "add", ir.AtomicOp.SUB: "sub", ir.AtomicOp.MAX: "max",
            ir.AtomicOp.MIN: "min", ir.AtomicOp.EXCHANGE: "xchg",
            ir.AtomicOp.COMPARE_EXCHANGE: "cmpxchg", ir.AtomicOp.AND: "and",
            ir.AtomicOp.OR: "or", ir.AtomicOp.XOR: "xor"}
# The plane operations cl_khr_subgroups has.
_SUBGROUP_FNS = {ir.PlaneFn.SUM: "sub_group_reduce_add", ir.PlaneFn.MAX: "sub_group_reduce_max",
                 ir.PlaneFn.MIN: "sub_group_reduce_min",
                 ir.PlaneFn.INCLUSIVE_SUM: "sub_group_scan_inclusive_add",
                 ir.PlaneFn.EXCLUSIVE_SUM: "sub_group_scan_exclusive_add"}
# The integer functions OpenCL C 1.2 has built in (for every integer type).
_INT_BUILTINS = {ir.MathFn.COUNT_ONES: "popcount", ir.MathFn.LEADING_ZEROS: "clz",
                 ir.MathFn.MUL_HI: "mul_hi", ir.MathFn.SATURATING_ADD: "add_sat",
                 ir.MathFn.SATURATING_SUB: "sub_sat"}
_BUILTINS = {B.UNIT_POS_X: "get_local_id(0)", B.UNIT_POS_Y: "get_local_id(1)",
             B.UNIT_POS_Z: "get_local_id(2)", B.CUBE_POS_X: "get_group_id(0)",
             B.CUBE_POS_Y: "get_group_id(1)", B.CUBE_POS_Z: "get_group_id(2)",
             B.CUBE_COUNT_X: "get_num_groups(0)", B.CUBE_COUNT_Y: "get_num_groups(1)",
             B.CUBE_COUNT_Z: "get_num_groups(2)", B.ABSOLUTE_POS_X: "get_global_id(0)",
             B.ABSOLUTE_POS_Y: "get_global_id(1)", B.ABSOLUTE_POS_Z: "get_global_id(2)",
             B.PLANE_DIM: "get_sub_group_size()", B.UNIT_POS_PLANE: "get_sub_group_local_id()"}
_MATH = StandardC.native.functions[Elem.F32]
NATIVE = Native(short_circuit=True, nan_minmax=True, float_rem=True,
                builtins=frozenset(_BUILTINS),
                functions={Elem.F16: _MATH, Elem.F32: _MATH, Elem.F64: _MATH,
                           **{t: frozenset(_INT_BUILTINS) for t in Elem if t.is_int}})
"""What OpenCL C computes itself: its built-in functions are within the ulp the IR
allows (OpenCL 1.2, section 7.4), ``fmin``/``fmax`` have the NaN rule and ``&&``
short-circuits."""


class Need:
    """Names of the optional device features a kernel may need."""

    FP64 = "cl_khr_fp64"
    FP16 = "cl_khr_fp16"
    INT64_ATOMICS = "cl_khr_int64_atomics"
    SUBGROUPS = "cl_khr_subgroups"
    SUBGROUP_ARITHMETIC = "cl_khr_subgroup_non_uniform_arithmetic"
    SUBGROUP_BALLOT = "cl_khr_subgroup_ballot"
    SUBGROUP_SHUFFLE = "cl_khr_subgroup_shuffle"


@dataclass(frozen=True)
class ArrayArg:
    """One array parameter as the kernel takes it: buffer, offset, buffer length, the
    logical length where ``length``, the rank where ``rank``, and ``dims`` shape/stride
    pairs."""

    name: str
    elem: Elem
    dims: int
    length: bool = False
    rank: bool = False


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
        return {"arrays": [[a.name, a.elem.value, a.dims, int(a.length), int(a.rank)]
                           for a in self.arrays],
                "scalars": [[s.name, s.elem.value] for s in self.scalars]}

    @classmethod
    def arrays_from_header(cls, header: object) -> tuple[tuple[ArrayArg, ...],
                                                         tuple[ScalarArg, ...]]:
        """The argument lists of :meth:`to_header`'s output; ValueError if malformed."""
        try:
            assert isinstance(header, dict)
            arrays = tuple(ArrayArg(str(n), Elem(e), int(d), bool(length), bool(rank))
                           for n, e, d, length, rank in header["arrays"])
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
        e = CEmitter(kernel, cube_dim, mode, OpenclDialect())
        source = e.program()
        layout = KernelLayout(
            arrays=tuple(ArrayArg(p.name, p.elem, _dims(e, p.name),
                                  ("len", p.name, 0) in e.meta_used,
                                  ("rank", p.name, 0) in e.meta_used)
                         for p in e.arrays.values()),
            scalars=tuple(ScalarArg(p.name, p.elem) for p in e.scalars.values()),
            needs=frozenset(e.needs), shared_bytes=e.shared_bytes)
        return CompiledKernel(name=kernel.name, entry_point=f"k_{e.ident}", source=source,
                              extension=self.extension, repr=layout, core=e.kernel)


def _dims(e: CEmitter, array: str) -> int:
    """How many shape/stride pairs of ``array`` the kernel takes: past the largest axis read."""
    return max((d + 1 for kind, a, d in e.meta_used
                if a == array and kind in ("shape", "stride")), default=0)


class OpenclDialect(StandardC):
    """OpenCL C 1.2, as the module says."""

    backend = BACKEND
    types: Mapping[Elem, str] = {
        Elem.F16: "half", Elem.F32: "float", Elem.F64: "double", Elem.I32: "int",
        Elem.I64: "long", Elem.U32: "uint", Elem.U64: "ulong", Elem.BOOL: "bool",
        Elem.I8: "char", Elem.U8: "uchar", Elem.I16: "short", Elem.U16: "ushort"}
    bool_memory = "uchar"
    int_suffixes: Mapping[Elem, str] = {Elem.I32: "", Elem.I64: "L", Elem.U32: "u", Elem.U64: "UL"}
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

    def plane_barrier(self, e: CEmitter) -> str:
        """``cl_khr_subgroups``' ``sub_group_barrier``, fencing local and global memory."""
        e.need(Need.SUBGROUPS)
        return "sub_group_barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    unroll = "#pragma unroll"
    shared_space = "__local "
    f32_suffix = ""  # the built-ins are overloaded
    line_sizes = (1, 2, 4, 8, 16)
    vector_ops = True
    native = NATIVE

    def use_type(self, e: CEmitter, elem: Elem, what: str, memory: bool) -> None:
        """f64 and f16 are extensions."""
        if elem is Elem.F64:
            e.need(Need.FP64)
        elif elem is Elem.F16:
            e.need(Need.FP16)

    def float_literal(self, value: float, elem: Elem) -> str:
        """C's, f16 through an exact f32 literal."""
        if elem is Elem.F16:
            return f"((half){super().float_literal(value, Elem.F32)})"
        return super().float_literal(value, elem)

    def cast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """Float to integer saturating (``convert_<T>_sat``); integer narrowing to a
        signed type through its unsigned one (so no conversion is out of range)."""
        if dst is Elem.BOOL or src is Elem.BOOL or dst.is_float:
            return super().cast(e, x, src, dst)
        if src.is_float:
            return f"convert_{self.types[dst]}_sat({x})"
        if dst.is_signed and dst.bits <= src.bits:
            return self.bitcast(e, f"(({self.types[UNSIGNED[dst]]})({x}))", UNSIGNED[dst],
                                dst)
        return super().cast(e, x, src, dst)

    def vector_type(self, e: CEmitter, elem: Elem, size: int) -> str | None:
        """``<type>N``; None for bool (no bool vectors in OpenCL C)."""
        return None if elem is Elem.BOOL else f"{self.types[elem]}{size}"

    def component(self, x: str, k: int, size: int) -> str:
        """``x.s0`` ... ``x.sf``."""
        return f"{x}.s{k:x}"

    def vector_make(self, e: CEmitter, type_name: str, parts: list[str]) -> str:
        """A vector literal."""
        return f"(({type_name})({', '.join(parts)}))"

    def vector_fill(self, e: CEmitter, type_name: str, x: str) -> str | None:
        """A vector literal of one value (OpenCL C fills every element with it)."""
        return f"(({type_name})({x}))"

    def load_line(self, e: CEmitter, array: ArrayRef, index: str, index_type: Elem,
                  t: ir.Line) -> str:
        """StandardC's helper, reading the whole line with ``vloadN``."""
        if t.elem is Elem.BOOL:
            return super().load_line(e, array, index, index_type, t)
        return e.line_loader(array, index, index_type, t, lambda j: f"a[{j}]",
                             f"vload{t.size}(i, a)")

    def store_whole_line(self, e: CEmitter, array: ArrayRef, index: str, index_type: Elem,
                         value: str, t: ir.Line) -> str | None:
        """``vstoreN``."""
        if t.elem is Elem.BOOL:
            return None
        return f"vstore{t.size}({value}, {index}, {array.text});"

    def bitcast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """``as_<type>``."""
        return f"as_{self.types[dst]}({x})"

    def bits(self, e: CEmitter, fn: ir.MathFn, args: list[str], t: Elem) -> str:
        """OpenCL C's integer built-ins (``popcount``, ``clz``, ``mul_hi``, ``add_sat``,
        ``sub_sat``)."""
        text = f"{_INT_BUILTINS[fn]}({', '.join(args)})"
        counts = fn in (ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS)
        return f"((uint){text})" if counts else text

    def builtin(self, e: CEmitter, name: ir.BuiltinName) -> str | None:
        """The work-item functions (``size_t``, as ``uint``)."""
        if name in (B.PLANE_DIM, B.UNIT_POS_PLANE):
            e.need(Need.SUBGROUPS)
        text = _BUILTINS.get(name)
        return None if text is None else f"(uint){text}"

    def pointer(self, e: CEmitter, array: ArrayRef, const: bool) -> str:
        """With its address space."""
        space = "__local" if array.shared else "__private" if array.local else "__global"
        return f"{space} {super().pointer(e, array, const)}"

    def atomic(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
               operands: list[str]) -> str:
        """The built-ins, 64-bit ones from the extensions; a compare-exchange on an f32
        element on its bits, through a ``uint`` pointer."""
        if array.elem is Elem.F32:  # the core IR's compare-exchange of the bits
            space = "__local" if array.shared else "__global"
            return (f"atomic_cmpxchg((volatile {space} uint*)&{element}, "
                    f"{', '.join(operands)})")
        args = ", ".join([f"&{element}", *operands])
        if array.elem in (Elem.I32, Elem.U32):
            return f"atomic_{_ATOMICS[op]}({args})"
        e.need(Need.INT64_ATOMICS)
        return f"atom_{_ATOMICS[op]}({args})"

    def plane(self, e: CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
              t: Elem) -> str:
        """``cl_khr_subgroups``' functions (``all``/``any`` of an int), and the
        products, ballots and shuffles of the ``cl_khr_subgroup_*`` extensions (which
        the device must report); a bool broadcast is refused."""
        e.need(Need.SUBGROUPS)
        match fn:
            case ir.PlaneFn.ALL | ir.PlaneFn.ANY:
                return f"(sub_group_{fn.value}((int)({value})) != 0)"
            case ir.PlaneFn.BALLOT:
                e.need(Need.SUBGROUP_BALLOT)
                return f"sub_group_ballot((int)({value})).x"
        if t is Elem.BOOL:
            e.fail(f"plane_{fn.value} of bool needs a subgroup broadcast of bool, "
                   "which cl_khr_subgroups lacks")
        match fn:
            case ir.PlaneFn.BROADCAST:
                return f"sub_group_broadcast({value}, {lane})"
            case ir.PlaneFn.PROD:
                e.need(Need.SUBGROUP_ARITHMETIC)
                return f"sub_group_non_uniform_reduce_mul({value})"
            case ir.PlaneFn.SHUFFLE_XOR:
                e.need(Need.SUBGROUP_SHUFFLE)
                return f"sub_group_shuffle_xor({value}, {lane})"
            case ir.PlaneFn.SHUFFLE:
                e.need(Need.SUBGROUP_SHUFFLE)
                return f"sub_group_shuffle({value}, {lane})"
            case ir.PlaneFn.INCLUSIVE_PROD | ir.PlaneFn.EXCLUSIVE_PROD:
                e.need(Need.SUBGROUP_ARITHMETIC)
                kind = fn.value.split("_")[0]
                return f"sub_group_non_uniform_scan_{kind}_mul({value})"
        return f"{_SUBGROUP_FNS[fn]}({value})"

    def head(self, e: CEmitter) -> list[str]:
        """The extensions the program uses."""
        out = []
        for ext in sorted(e.needs):
            if ext == Need.INT64_ATOMICS:
                out.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
                out.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
            else:
                out.append(f"#pragma OPENCL EXTENSION {ext} : enable")
        return out

    def signature(self, e: CEmitter) -> str:
        """The ``__kernel``, its arguments as the module lists them."""
        args = []
        for p in e.arrays.values():
            s, const = e.stems[p.name], "" if p.name in e.written else "const "
            args += [f"__global {const}{e.mtype(p.elem)}* g_{s}", f"const ulong o_{s}",
                     f"const uint {e.metadata('buffer_len', p.name)}"]
            args += [f"const uint {e.meta_used[(kind, p.name, 0)]}" for kind in ("len", "rank")
                     if (kind, p.name, 0) in e.meta_used]
            for d in range(_dims(e, p.name)):
                args += [f"const uint {e.metadata('shape', p.name, d)}",
                         f"const uint {e.metadata('stride', p.name, d)}"]
        for p in e.scalars.values():
            args.append(f"const {'uchar' if p.elem is Elem.BOOL else e.ctype(p.elem)} "
                        f"a_{e.stems[p.name]}")
        x, y, z = e.dim
        sep = ",\n    "
        return (f"__kernel __attribute__((reqd_work_group_size({x}, {y}, {z})))\n"
                f"void k_{e.ident}(\n    {sep.join(args) or 'void'})")

    def prologue(self, e: CEmitter) -> None:
        """Scalars as values, arrays as pointers at their offsets."""
        for p in e.scalars.values():
            s = e.stems[p.name]
            value = f"(a_{s} != 0)" if p.elem is Elem.BOOL else f"a_{s}"
            e.line(f"const {e.ctype(p.elem)} p_{s} = {value};", f"{p.name}: {p.elem.value}")
        for p in e.arrays.values():
            s, const = e.stems[p.name], "" if p.name in e.written else "const "
            e.line(f"__global {const}{e.mtype(p.elem)}* const p_{s} = g_{s} + o_{s};",
                   f"{p.name}: Array[{p.elem.value}]")

