"""The ``cuda`` backend's Compiler: an IR kernel -> one CUDA C++ translation unit,
through the core's C-family emitter (:class:`cubecl_server.backend.lowering.CEmitter`) with
the dialect here.

The unit is the :data:`~cubecl_cuda.prelude.PRELUDE`, the helpers the kernel uses,
then one ``extern "C" __global__`` function, the entry point, whose parameters are, in
order (:class:`Param` records each for the launch):

- one pointer per array parameter (``T*``; ``bool`` elements as ``unsigned char``), in
  the kernel's order;
- one value per scalar parameter, in order (``f16`` passed as its ``u16`` bits and
  ``bool`` as a ``u8``, so no launcher has to know how to pack those types);
- the metadata the body reads, each a ``u32``: the length (elements) of an array that
  ``len()`` reads or that checked mode bounds, and each ``shape``/``stride`` the body
  reads, per (array, dim), in the order the body first reads them. Shapes and strides
  past an array's rank are 1.

Execution model: one IR unit is one CUDA thread, a cube is a block (the cube dim is
compiled in, and is the ``__launch_bounds__``), the cube count the grid; a plane is a
warp (32 units). What the dialect chooses where the emitter leaves it open: ``f16`` is
``__half``, its math computed in ``f32`` and rounded once (as NumPy does for
``float16``); literals are exact (hexadecimal, or bit patterns for NaN and the
infinities); atomics are CUDA's (64-bit signed ones through ``unsigned long long``);
plane operations are the prelude's. Lines of 2 and 4 ``f32``, ``i32`` and ``u32`` are
CUDA's vector types (``float4``, ``int2``, ``uint4``, made by ``make_float4``...); the
other lines (8 and 16, and the other element types) are the emitter's struct of an
array; CUDA's vector types have no operators, so every operation on a line is a helper
acting on each element. What is refused is what CUDA lacks: a block of
more than :data:`MAX_CUBE_DIM` threads. The device's limit on shared memory (48 KiB of
static shared memory per block) is NVRTC's to enforce, in its log.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cubecl_cuda import BACKEND
from cubecl_cuda.prelude import PLANE_SIZE, PRELUDE
from cubecl_server import ir
from cubecl_server.backend import CompiledKernel, CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import ArrayRef, CEmitter, Native, StandardC

__all__ = ["CudaCompiler", "KernelRepr", "Param", "MAX_CUBE_DIM", "CTYPES"]

MAX_CUBE_DIM = 1024
"""Most threads a CUDA block may have, on every architecture."""

Elem = ir.Elem
B = ir.BuiltinName

CTYPES = {
    Elem.F16: "__half", Elem.F32: "float", Elem.F64: "double", Elem.I32: "int",
    Elem.I64: "long long", Elem.U32: "unsigned int", Elem.U64: "unsigned long long",
    Elem.BOOL: "bool", Elem.I8: "signed char", Elem.U8: "unsigned char", Elem.I16: "short",
    Elem.U16: "unsigned short",
}
"""The C++ type of each IR element type."""
# The element types whose lines of 2 and 4 are CUDA's vector types, by their stem.
_VECTORS = {Elem.F32: "float", Elem.I32: "int", Elem.U32: "uint"}

# How a scalar parameter crosses the launch when its C++ type is awkward to pack.
_SCALAR_WIRE = {Elem.F16: ("unsigned short", "uint16", "__ushort_as_half(w_{0})"),
                Elem.BOOL: ("unsigned char", "uint8", "(w_{0} != 0)")}
_HALF_FROM = {Elem.F32: "__float2half_rn", Elem.F64: "__double2half",
              Elem.I32: "__int2half_rn", Elem.I64: "__ll2half_rn",
              Elem.U32: "__uint2half_rn", Elem.U64: "__ull2half_rn"}
_HALF_TO = {Elem.I32: "__half2int_rz", Elem.I64: "__half2ll_rz",
            Elem.U32: "__half2uint_rz", Elem.U64: "__half2ull_rz"}
_ATOMICS = {ir.AtomicOp.ADD: "atomicAdd", ir.AtomicOp.SUB: "atomicSub",
            ir.AtomicOp.MAX: "atomicMax", ir.AtomicOp.MIN: "atomicMin",
            ir.AtomicOp.EXCHANGE: "atomicExch", ir.AtomicOp.COMPARE_EXCHANGE: "atomicCAS",
            ir.AtomicOp.AND: "atomicAnd", ir.AtomicOp.OR: "atomicOr", ir.AtomicOp.XOR: "atomicXor"}
_BUILTINS = {B.UNIT_POS_X: "threadIdx.x", B.UNIT_POS_Y: "threadIdx.y",
             B.UNIT_POS_Z: "threadIdx.z", B.CUBE_POS_X: "blockIdx.x",
             B.CUBE_POS_Y: "blockIdx.y", B.CUBE_POS_Z: "blockIdx.z",
             B.CUBE_COUNT_X: "gridDim.x", B.CUBE_COUNT_Y: "gridDim.y",
             B.CUBE_COUNT_Z: "gridDim.z", B.PLANE_DIM: f"{PLANE_SIZE}u"}
_MATH = StandardC.native.functions[Elem.F32]
# The integer intrinsics, of 32 and 64 bits (8- and 16-bit integers take no bit functions).
_BITS = frozenset({ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS, ir.MathFn.FIND_FIRST_SET,
                   ir.MathFn.REVERSE_BITS, ir.MathFn.MUL_HI})
NATIVE = Native(
    short_circuit=True, nan_minmax=True, float_rem=True, builtins=frozenset(_BUILTINS),
    functions={Elem.F16: _MATH, Elem.F32: _MATH, Elem.F64: _MATH,
               **{t: _BITS for t in (Elem.I32, Elem.U32, Elem.I64, Elem.U64)}},
    float_atomics=frozenset({ir.AtomicOp.ADD}))
"""What CUDA computes itself: its math library (within 4 ulp, most functions 1-2,
CUDA C++ Programming Guide, "Mathematical Functions"), the integer intrinsics, and
``atomicAdd`` on floats."""


@dataclass(frozen=True)
class Param:
    """One parameter of the entry point, as the launch fills it.

    ``kind`` is ``"array"`` (a device pointer to array parameter ``index``),
    ``"scalar"`` (scalar parameter ``index``), ``"tensor_map"`` (the encoded
    ``CUtensorMap`` of the tensor map that is scalar parameter ``index``: tensor maps
    count among the scalars, in the kernel's order), or ``"len"``, ``"buffer_len"``,
    ``"rank"``, ``"shape"``, ``"stride"`` (a ``u32`` of array parameter ``index``, along
    ``dim`` for the last two: ``lowering.metadata_kind``). ``wire``
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
    """The ``cuda`` backend's Compiler: IR -> CUDA C++ source for NVRTC; ``tma``: the
    device has tensor maps (sm_90 and later), so kernels taking them are lowered."""

    extension = "cu"

    def __init__(self, tma: bool = False) -> None:
        self.tma = tma

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` (checked IR) for blocks of ``cube_dim`` threads in ``mode``.

        Raise ``CompilationError`` for a cube dim larger than a CUDA block, and for a
        tensor map where the device has none.
        """
        e = CEmitter(kernel, cube_dim, mode, CudaDialect(self.tma))
        source = e.program()
        order = {name: i for i, name in enumerate(e.arrays)}
        values = [p for p in kernel.params if not p.array]
        params = (
            [Param("array", i, "uint64") for i in range(len(e.arrays))]
            + [Param("tensor_map", i, "tensor_map") if p.tensor_map else
               Param("scalar", i, _SCALAR_WIRE.get(p.elem, ("", p.elem.numpy_name))[1])
               for i, p in enumerate(values)]
            + [Param(kind, order[a], "uint32", dim) for kind, a, dim in e.meta_used])
        return CompiledKernel(name=kernel.name, entry_point=f"cubecl_{e.ident}", source=source,
                              extension=self.extension,
                              repr=KernelRepr(tuple(params), e.dim), core=e.kernel)


def _bits_literal(value: float, elem: Elem) -> str:
    """``value``'s bit pattern, reinterpreted: for what has no literal."""
    if elem is Elem.F16:
        bits = int(np.array(value, dtype=np.float16).view(np.uint16))
        return f"__ushort_as_half((unsigned short)0x{bits:04x}u)"
    if elem is Elem.F32:
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        return f"__uint_as_float(0x{bits:08x}u)"
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return f"__longlong_as_double((long long)0x{bits:016x}ull)"


class CudaDialect(StandardC):
    """CUDA C++, as the module says."""

    backend = BACKEND
    types = CTYPES
    bool_memory = "unsigned char"
    int_suffixes: Mapping[Elem, str] = {Elem.I32: "", Elem.I64: "ll", Elem.U32: "u",
                                        Elem.U64: "ull"}
    line_sizes = (1, 2, 4, 8, 16)
    function_prefix = "static __device__ __forceinline__ "
    barrier = "__syncthreads();"
    native = NATIVE

    def plane_barrier(self, e: CEmitter) -> str:
        """``__syncwarp()``: every lane of the warp, with a memory fence among them."""
        return "__syncwarp();"
    unroll = "#pragma unroll"
    shared_space = "__shared__ "

    def __init__(self, tma: bool = False) -> None:
        self.tensor_maps = tma
        """Whether tensor maps are lowered (the device has them)."""
        self._tma_targets: frozenset[str] = frozenset()

    def prepare(self, e: CEmitter) -> None:
        """Refuse a cube larger than a block; note the shared arrays tensor maps load
        into, and declare what loading them needs."""
        if math.prod(e.dim) > MAX_CUBE_DIM:
            e.fail(f"cube dim {e.dim} has {math.prod(e.dim)} units; a CUDA block "
                   f"has at most {MAX_CUBE_DIM}")
        self._tma_targets = frozenset(n.shared for n in ir.walk(e.kernel.body)
                                      if isinstance(n, ir.TensorMapLoad))
        if e.tensor_maps:
            e.helper("cc_tensor_map", lambda: TENSOR_MAP_TYPE)
        if self._tma_targets:
            e.helper("cc_tma", lambda: TMA_HELPERS)

    def shared_decl(self, e: CEmitter, sh: ir.SharedArray, name: str) -> str | None:
        """``__shared__ T name[N];``, aligned to 1024 bytes where a tensor map loads
        into it (what the widest swizzle needs)."""
        align = "alignas(1024) " if sh.name in self._tma_targets else ""
        return f"{self.shared_space}{align}{e.mtype(sh.elem)} {name}[{sh.size}];"

    def tensor_map_load(self, e: CEmitter, s: ir.TensorMapLoad, coords: list[str]) -> None:
        """A barrier, then the cube's first thread arms the mbarrier with the box's
        bytes and issues ``cp.async.bulk.tensor``; every thread waits for the phase."""
        sh = e.shared[s.shared]
        nbytes = sh.size * (sh.elem.bits // 8)
        first = "threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u"
        e.helper(f"cc_tma_load_{len(coords)}d", lambda: _tma_load(e, len(coords)))
        e.line("__syncthreads();", ir.format_stmt(s))
        e.line(f"if ({first}) cc_tma_load_{len(coords)}d(&p_{e.stems[s.map]}, "
               f"s_{e.stems[s.shared]}, &cc_tma_bar, {nbytes}u, {', '.join(coords)});")
        e.line("cc_tma_wait(&cc_tma_bar, cc_tma_phase);")
        e.line("cc_tma_phase ^= 1u;")

    def use_type(self, e: CEmitter, elem: Elem, what: str, memory: bool) -> None:
        """Every type has a name."""

    def vector_type(self, e: CEmitter, elem: Elem, size: int) -> str | None:
        """``float2``, ``float4``, ``int2``... ; None for the rest."""
        name = _VECTORS.get(elem)
        return f"{name}{size}" if name is not None and size <= 4 else None

    def component(self, x: str, k: int, size: int) -> str:
        """``.x``, ``.y``, ``.z``, ``.w``."""
        return f"{x}.{'xyzw'[k]}"

    def vector_make(self, e: CEmitter, type_name: str, parts: list[str]) -> str:
        """``make_<type>(...)``."""
        return f"make_{type_name}({', '.join(parts)})"

    def struct_decl(self, e: CEmitter, name: str, member: str, size: int) -> str:
        """``struct name { T v[N]; };``."""
        return f"struct {name} {{ {member} v[{size}]; }};"

    def struct_make(self, e: CEmitter, name: str, member: str, parts: list[str]) -> str:
        """Aggregate initialisation."""
        return f"{name}{{{{{', '.join(parts)}}}}}"

    def float_literal(self, value: float, elem: Elem) -> str:
        """Hexadecimal where finite; bit patterns for f16 and the rest."""
        if elem is Elem.F16 or not math.isfinite(value if elem is Elem.F64
                                                 else float(np.float32(value))):
            return _bits_literal(value, elem)
        return super().float_literal(value, elem)

    def cast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """C++'s conversions; ``__half`` through ``cuda_fp16.h``'s (toward zero to
        integers, as C's are)."""
        if dst is Elem.F16:
            return (f"__float2half_rn((float){x})" if src is Elem.BOOL
                    else f"{_HALF_FROM[src]}({x})")
        if src is Elem.F16:
            if dst in _HALF_TO:
                return f"{_HALF_TO[dst]}({x})"
            x, src = f"__half2float({x})", Elem.F32
        return super().cast(e, x, src, dst)

    def math(self, e: CEmitter, fn: str, args: list[str], t: Elem) -> str:
        """C's; ``f16`` computed in ``f32``, rounded once."""
        if t is not Elem.F16:
            return super().math(e, fn, args, t)
        value = super().math(e, fn, [f"__half2float({a})" for a in args], Elem.F32)
        return value if fn in ("isnan", "isinf") else f"__float2half_rn({value})"

    def bits(self, e: CEmitter, fn: ir.MathFn, args: list[str], t: Elem) -> str:
        """CUDA's integer intrinsics (``__popc``, ``__clz``, ``__brev``, ``__ffs``,
        ``__[u]mulhi`` and their 64-bit forms), each on the C type it takes."""
        wide, signed = t.bits == 64, t.is_signed
        u, s = ("unsigned long long", "long long") if wide else ("unsigned int", "int")
        ll, u32 = "ll" if wide else "", e.ctype(Elem.U32)
        x = args[0]
        match fn:
            case ir.MathFn.COUNT_ONES:
                return f"(({u32})__popc{ll}(({u}){x}))"
            case ir.MathFn.LEADING_ZEROS:
                return f"(({u32})__clz{ll}(({s}){x}))"
            case ir.MathFn.FIND_FIRST_SET:
                return f"(({u32})__ffs{ll}(({s}){x}))"
            case ir.MathFn.REVERSE_BITS:
                return f"(({e.ctype(t)})__brev{ll}(({u}){x}))"
        name = ("__mul64hi" if signed else "__umul64hi") if wide else (
            "__mulhi" if signed else "__umulhi")
        return f"(({e.ctype(t)}){name}({x}, {args[1]}))"  # MUL_HI, the one left

    def builtin(self, e: CEmitter, name: ir.BuiltinName) -> str | None:
        """``threadIdx``, ``blockIdx``, ``gridDim``, the warp size (warps are cut from
        the block's linear thread index, x fastest: the core derives the rest)."""
        return _BUILTINS.get(name)

    def atomic(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
               operands: list[str]) -> str:
        """CUDA's atomics; 64-bit ones CUDA has only unsigned through ``unsigned long
        long``, a subtraction as the addition of the negated value; a compare-exchange
        on an f32 element on its bits."""
        t = array.elem
        if t is Elem.F32 and op is ir.AtomicOp.COMPARE_EXCHANGE:  # the core IR's, of bits
            return f"atomicCAS((unsigned int*)&{element}, {', '.join(operands)})"
        if t in (Elem.I32, Elem.U32, Elem.F32) or (
                t is Elem.I64 and op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN)):
            return f"{_ATOMICS[op]}(&{element}, {', '.join(operands)})"
        ull = "unsigned long long"
        values = operands if t is Elem.U64 else [f"({ull}){v}" for v in operands]
        fn = _ATOMICS[op]
        if op is ir.AtomicOp.SUB:
            fn, values[-1] = "atomicAdd", f"(0ull - {values[-1]})"
        pointer = f"&{element}" if t is Elem.U64 else f"({ull}*)&{element}"
        call = f"{fn}({pointer}, {', '.join(values)})"
        return call if t is Elem.U64 else f"((long long){call})"

    def plane(self, e: CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
              t: Elem) -> str:
        """The prelude's warp operations."""
        return f"cc_plane_{fn.value}({value}{'' if lane is None else ', ' + lane})"

    def head(self, e: CEmitter) -> list[str]:
        """The prelude."""
        return [PRELUDE]

    def signature(self, e: CEmitter) -> str:
        """The ``extern "C" __global__`` entry point; parameters as the module says."""
        params = [f"{e.mtype(p.elem)}* p_{e.stems[p.name]}" for p in e.arrays.values()]
        for p in e.kernel.params:
            wire = _SCALAR_WIRE.get(p.elem)
            if p.array:
                continue
            if p.tensor_map:
                params.append(f"const __grid_constant__ cc_tensor_map p_{e.stems[p.name]}")
            else:
                params.append(f"{wire[0]} w_{e.stems[p.name]}" if wire
                              else f"{e.ctype(p.elem)} p_{e.stems[p.name]}")
        params += [f"unsigned int {text}" for text in e.meta_used.values()]
        return (f'extern "C" __global__ void __launch_bounds__({math.prod(e.dim)})\n'
                f"cubecl_{e.ident}({', '.join(params)})")

    def prologue(self, e: CEmitter) -> None:
        """The scalars that cross the launch as other types; the mbarrier tensor-map
        loads complete, initialised by the first thread before any load."""
        for p in e.scalars.values():
            if p.elem in _SCALAR_WIRE:
                s = e.stems[p.name]
                e.line(f"const {e.ctype(p.elem)} p_{s} = {_SCALAR_WIRE[p.elem][2].format(s)};")
        if self._tma_targets:
            e.line("__shared__ alignas(8) unsigned long long cc_tma_bar;",
                   "completed by each tensor-map load")
            e.line("unsigned int cc_tma_phase = 0u;")
            e.line("if (threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u) "
                   "cc_tma_init(&cc_tma_bar);")
            e.line("__syncthreads();")


TENSOR_MAP_TYPE = """// CUtensorMap as cuda.h declares it: 128 opaque bytes, 64-byte aligned.
struct alignas(64) cc_tensor_map { unsigned long long opaque[16]; };"""

TMA_HELPERS = r"""static __device__ __forceinline__ unsigned int cc_smem(const void* p) {
    return (unsigned int)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void cc_tma_init(unsigned long long* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(cc_smem(bar)) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void cc_tma_wait(unsigned long long* bar, unsigned int phase) {
    unsigned int done = 0u;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;"
                     " selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(cc_smem(bar)), "r"(phase) : "memory");
    }
}"""


def _tma_load(e: CEmitter, rank: int) -> str:
    """``cc_tma_load_<rank>d``: arm the mbarrier with ``bytes`` and issue the bulk
    tensor copy of the box at the coordinates into ``dst`` (the async proxy's writes
    ordered after the generic proxy's with a fence)."""
    coords = ", ".join(f"%{3 + k}" for k in range(rank))
    operands = ", ".join(f'"r"(c{k})' for k in range(rank))
    return e.function("void", f"cc_tma_load_{rank}d", [
        ("const cc_tensor_map*", "map"), ("void*", "dst"), ("unsigned long long*", "bar"),
        ("unsigned int", "bytes"), *((("int", f"c{k}")) for k in range(rank))], [
        "const unsigned int b = cc_smem(bar);",
        'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
        'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"',
        '             :: "r"(b), "r"(bytes) : "memory");',
        f'asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile'
        f'.mbarrier::complete_tx::bytes [%0], [%1, {{{coords}}}], [%2];"',
        f'             :: "r"(cc_smem(dst)), "l"(map), "r"(b), {operands} : "memory");'])
