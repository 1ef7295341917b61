"""The ``vulkan`` backend's Compiler: IR -> a GLSL 450 compute shader, through the
core's C-family emitter (:class:`cubecl_server.backend.CEmitter`) with the GLSL
dialect here. GLSL is C's syntax for every statement and expression the IR has, so
the emitter's lowering (loops, checked memory, division by zero, wrapping...) is
shared with the C-like backends; the dialect spells what GLSL spells otherwise:
constructor casts and GLSL's bit casts, no pointers (an atomic takes the element
itself, and a checked load is a function per array, inline for a local array, which
only ``main`` sees), buffers and shared arrays declared outside ``main``.

The shader's interface (what :class:`ShaderLayout` records and the server fills):

- ``set 0, binding 0``: the info words, a read-only std430 ``uint`` array bound as a
  *dynamic* storage buffer, so one descriptor set serves every launch with the same
  arrays and only the dynamic offset changes. Its layout is the core's
  :class:`~cubecl_server.backend.InfoLayout` (:attr:`ShaderLayout.info`): the words of
  every scalar parameter, every length, shape and stride the kernel reads (``Len``
  and the checked-mode bounds use the element count), and the launch's cube count
  (3 words): the cube builtins are computed from it by the emitter's
  :meth:`~cubecl_server.backend.CEmitter.fold_grid`, so a count past the device's
  ``maxComputeWorkGroupCount`` on one axis is dispatched folded onto the others
  (:func:`~cubecl_server.backend.fold_count`).
- ``set 0, binding 1 + i``: array parameter ``i`` as a std430 runtime array, bound
  as a descriptor *range* at the slice's offset. So arrays may start anywhere inside a
  pooled allocation that is aligned to ``minStorageBufferOffsetAlignment``; the
  shader indexes from 0. Arrays the kernel never writes are ``readonly``; none is
  ``restrict`` (two parameters may be one buffer). An f32 array that atomic max/min
  act on is declared a second time at its binding, as ``uint`` (``ub_p_<name>``): they
  are compare-exchange loops on its bits, with ``fmax``/``fmin``'s NaN rules, wherever
  u32 atomics are (not on shared arrays, which GLSL cannot view as ``uint``).
- The cube dim is ``local_size_x/y/z``: part of the ArtifactId, so a constant here.

What the dialect chooses: signed arithmetic wraps as written (SPIR-V's does);
``MIN``/``MAX``/``CLAMP`` of floats return the non-NaN operand; ``erf``, ``pow``,
``tanh``, ``asin acos atan atan2 sinh cosh log2 log1p expm1 copysign hypot`` are
implemented here (GLSL's are undefined for negative bases, lose accuracy, or do not
exist; see ``_f32_helpers``, ``_precision_helpers``: within 2 ulp on lavapipe);
``tan``, ``exp2``, ``ROUND`` (``roundEven``) and ``trunc`` are GLSL's; float ``REM`` is
C's ``fmod``, exact. f16 transcendental functions are evaluated in f32; f64 ones
(GLSL has none for double but ``sqrt``, ``roundEven``, ``trunc``...) are written here
in double precision (see ``_f64_helpers``: a few ulp).

Lines of 2 and 4 are GLSL's vectors (``vec4``, ``dvec2``, ``ivec4``, ``uvec4``,
``bvec4``, ``i64vec4``, ``f16vec4``...), with their operators where GLSL's have the IR's
meaning (``+ - * /``, the bitwise ones); lines of 8 and 16, which GLSL has no vector
for, are the emitter's struct of an array. A line load or store reads or writes the
buffer's elements one by one (the buffer stays an array of elements), through a
function per array like a checked load.

Device-dependent parts come from :class:`ShaderFeatures`: f64 needs
``shaderFloat64``, i64/u64 ``shaderInt64``, f16 ``shaderFloat16`` plus 16-bit
storage, bool arrays 8-bit storage, 64-bit atomics the Int64Atomics features, f32
atomic add ``VK_EXT_shader_atomic_float``, plane operations subgroup basic,
arithmetic and shuffle in compute (``PLANE_DIM = gl_SubgroupSize``). A kernel that
needs what the device lacks raises ``CompilationError`` saying which feature; those
refusals, and the device's limits, are all it checks.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server.backend import (
    ArrayRef,
    CEmitter,
    CompiledKernel,
    CubeDim,
    ExecutionMode,
    InfoLayout,
    InfoWords,
    StandardC,
)

__all__ = ["ShaderFeatures", "ArrayBinding", "ShaderLayout", "VulkanCompiler"]

Elem = ir.Elem
B = ir.BuiltinName

_TYPES = {Elem.F16: "float16_t", Elem.F32: "float", Elem.F64: "double",
          Elem.I32: "int", Elem.I64: "int64_t", Elem.U32: "uint",
          Elem.U64: "uint64_t", Elem.BOOL: "bool"}
# The prefix of GLSL's vector of each element type (``vec4``, ``ivec2``...).
_VECTORS = {Elem.F16: "f16vec", Elem.F32: "vec", Elem.F64: "dvec", Elem.I32: "ivec",
            Elem.I64: "i64vec", Elem.U32: "uvec", Elem.U64: "u64vec", Elem.BOOL: "bvec"}
# C math functions GLSL has for float (f32) arguments with the IR's meaning, and
# accurate enough on the drivers measured (lavapipe: tan, exp2 within 3e-7 relative).
_GLSL_FNS = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "inversesqrt",
             "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "tan": "tan",
             "exp2": "exp2", "rint": "roundEven", "trunc": "trunc"}
# Of those, the ones GLSL also has for double.
_DOUBLE_FNS = frozenset({"sqrt", "rsqrt", "floor", "ceil", "rint", "trunc"})
# The f32 functions written here (see ``_f32_helpers``, ``_precision_helpers``): GLSL
# has none (copysign, hypot, log1p, expm1), or one too loose (asin, acos, atan: about
# 1e-5 relative on lavapipe; sinh near 0; log2 near 1).
_OWN_FNS = {"tanh": "_tanh", "erf": "_erf", "pow": "_pow", "asin": "_asin",
            "acos": "_acos", "atan": "_atan", "atan2": "_atan2", "sinh": "_sinh",
            "cosh": "_cosh", "log2": "_log2", "log1p": "_log1p", "expm1": "_expm1",
            "copysign": "_copysign", "hypot": "_hypot"}
_SUBGROUP_FNS = {ir.PlaneFn.SUM: "subgroupAdd", ir.PlaneFn.MAX: "subgroupMax",
                 ir.PlaneFn.MIN: "subgroupMin", ir.PlaneFn.PROD: "subgroupMul",
                 ir.PlaneFn.ALL: "subgroupAll", ir.PlaneFn.ANY: "subgroupAny",
                 ir.PlaneFn.INCLUSIVE_SUM: "subgroupInclusiveAdd",
                 ir.PlaneFn.EXCLUSIVE_SUM: "subgroupExclusiveAdd",
                 ir.PlaneFn.INCLUSIVE_PROD: "subgroupInclusiveMul",
                 ir.PlaneFn.EXCLUSIVE_PROD: "subgroupExclusiveMul"}
_ATOMIC_FNS = {ir.AtomicOp.ADD: "atomicAdd", ir.AtomicOp.SUB: "atomicAdd",
               ir.AtomicOp.MAX: "atomicMax", ir.AtomicOp.MIN: "atomicMin",
               ir.AtomicOp.EXCHANGE: "atomicExchange",
               ir.AtomicOp.COMPARE_EXCHANGE: "atomicCompSwap", ir.AtomicOp.AND: "atomicAnd",
               ir.AtomicOp.OR: "atomicOr", ir.AtomicOp.XOR: "atomicXor"}
_BUILTINS = {
    B.UNIT_POS: "gl_LocalInvocationIndex", B.UNIT_POS_X: "gl_LocalInvocationID.x",
    B.UNIT_POS_Y: "gl_LocalInvocationID.y", B.UNIT_POS_Z: "gl_LocalInvocationID.z",
    B.PLANE_DIM: "gl_SubgroupSize",
    B.UNIT_POS_PLANE: "gl_SubgroupInvocationID",
}


@dataclass(frozen=True)
class ShaderFeatures:
    """What the device lets a shader use; the defaults are Vulkan's guaranteed minimum."""

    float64: bool = False
    int64: bool = False
    float16: bool = False
    bool_storage: bool = False
    int64_atomics: bool = False
    float32_atomic_add: bool = False
    subgroups: bool = False
    subgroup_extended_types: bool = False
    subgroup_size: int = 0
    max_shared_bytes: int = 16384
    max_invocations: int = 128
    max_workgroup_size: tuple[int, ...] = (128, 128, 64)

    def describe(self) -> str:
        """A canonical text of every field (part of what the source key hashes)."""
        return repr(sorted(asdict(self).items()))


@dataclass(frozen=True)
class ArrayBinding:
    """One array parameter's storage buffer: its element type and whether it is written."""

    name: str
    elem: ir.Elem
    writable: bool


@dataclass(frozen=True)
class ShaderLayout:
    """What a launch must bind and fill: the arrays (bindings 1..n), the info words
    (binding 0) and the work-group size compiled in."""

    arrays: tuple[ArrayBinding, ...]
    info: InfoLayout
    local_size: tuple[int, int, int]
    entry_point: str = "main"

    def to_header(self) -> dict[str, Any]:
        """The layout as JSON-ready values (what the artifact header keeps)."""
        return {
            "entry_point": self.entry_point,
            "local_size": list(self.local_size),
            "arrays": [[a.name, a.elem.value, a.writable] for a in self.arrays],
            "info": self.info.to_header(),
        }

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> ShaderLayout:
        """The inverse of :meth:`to_header`; KeyError/ValueError/TypeError when malformed."""
        x, y, z = (int(v) for v in header["local_size"])
        return cls(
            arrays=tuple(ArrayBinding(str(n), ir.Elem(e), bool(w)) for n, e, w in header["arrays"]),
            info=InfoLayout.from_header(header["info"]),
            local_size=(x, y, z), entry_point=str(header["entry_point"]))


class VulkanCompiler:
    """The ``vulkan`` backend's Compiler: an IR kernel -> GLSL 450 compute source.

    ``features`` says what the target device supports; the ArtifactCompiler of a
    server uses :meth:`for_device` to get one that matches its device.
    """

    extension = "comp"

    def __init__(self, features: ShaderFeatures | None = None) -> None:
        self.features = features or ShaderFeatures()

    def for_device(self, features: ShaderFeatures) -> VulkanCompiler:
        """A compiler like this one for a device with ``features``."""
        return VulkanCompiler(features)

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` for work groups of ``cube_dim`` in ``mode``; the layout is
        the CompiledKernel's ``repr``."""
        d = GlslDialect(self.features)
        e = CEmitter(kernel, cube_dim, mode, d)
        source = e.program()
        layout = ShaderLayout(tuple(ArrayBinding(p.name, p.elem, p.name in e.written)
                                    for p in e.arrays.values()), d.info.layout(), e.dim)
        return CompiledKernel(name=kernel.name, entry_point="main", source=source,
                              extension=self.extension, repr=layout)


# ---------------------------------------------------------------- helper functions

_HELPERS: dict[str, str] = {
    "fminmax": """\
{T} _fmin({T} a, {T} b) {{ return isnan(a) ? b : (isnan(b) ? a : min(a, b)); }}
{T} _fmax({T} a, {T} b) {{ return isnan(a) ? b : (isnan(b) ? a : max(a, b)); }}""",
    "broadcast": """\
{T} _broadcast({T} v, uint lane) {{
    {T} r = subgroupShuffle(v, lane < gl_SubgroupSize ? lane : 0u);
    return lane < gl_SubgroupSize ? r : {T}(0);
}}""",
    # C's fmod, exactly: subtract the divisor scaled to the remainder's binade; each
    # subtraction is exact (Sterbenz), so the result is the true remainder.
    # f64 to f16 rounded once: to f32 rounding to odd (truncated, the last bit set where
    # inexact), whose extra bits then round to nearest exactly as from the f64 (drivers
    # go through f32 rounding to nearest, which rounds twice).
    "f64_to_f16": """\
float16_t _f64_to_f16(double x) {
    float f = float(x);
    if (double(f) != x && !isinf(f)) {
        uint b = floatBitsToUint(f);
        if (abs(double(f)) > abs(x)) b -= 1u;
        f = uintBitsToFloat(b | 1u);
    }
    return float16_t(f);
}""",
    "fmod": """\
{T} _fmod({T} a, {T} b) {{
    if (isnan(a) || isnan(b) || isinf(a) || b == {T}(0)) return {T}(uintBitsToFloat(0x7fc00000u));
    {T} r = abs(a), m = abs(b);
    if (isinf(b) || r < m) return a;
    int er, em;
    frexp(m, em);
    while (r >= m) {{
        frexp(r, er);
        {T} t = ldexp(m, er - em);
        if (t > r) t *= {T}(0.5);
        r -= t;
    }}
    return a < {T}(0) ? -r : r;
}}""",
    # Juffa's single-precision erf (about 1 ulp): a polynomial in x^2 near 0, and
    # 1 - exp(polynomial) beyond, both keeping relative accuracy down to subnormals.
    "erf": """\
float _erf(float a) {
    float t = abs(a), s = a * a, r;
    if (t > 0.927734375) {
        r = fma(-1.72853470e-5, t, 3.83197126e-4);
        float u = fma(-3.88396438e-3, t, 2.42546219e-2);
        r = fma(r, s, u);
        r = fma(r, t, -1.06777877e-1);
        r = fma(r, t, -6.34846687e-1);
        r = fma(r, t, -1.28717512e-1);
        r = fma(r, t, -t);
        r = 1.0 - exp(r);
        return a < 0.0 ? -r : r;
    }
    r = -5.96761703e-4;
    r = fma(r, s, 4.99119423e-3);
    r = fma(r, s, -2.67681349e-2);
    r = fma(r, s, 1.12819925e-1);
    r = fma(r, s, -3.76125336e-1);
    r = fma(r, s, 1.28379166e-1);
    return fma(r, a, a);
}""",
    # tanh through exp(-2|x|) saturates cleanly (no inf/inf), and an odd Taylor
    # polynomial below 0.25 keeps the relative accuracy the subtraction would lose.
    "tanh": """\
float _tanh(float x) {
    float a = abs(x);
    if (isnan(x)) return x;
    if (a < 0.25) {
        float s = x * x;
        return x + x * s * (-0.333333333 + s * (0.133333333 + s * (-0.0539682540
            + s * (0.0218694885 + s * -0.00886323552))));
    }
    float e = exp(-2.0 * a);
    float r = (1.0 - e) / (1.0 + e);
    return x < 0.0 ? -r : r;
}""",
    # C's pow: negative bases with integral exponents, 0 and infinities; GLSL's
    # pow is undefined for x < 0 and for x == 0 with y <= 0.
    "pow": """\
float _pow(float x, float y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    float r = exp2(y * log2(abs(x)));
    if (x == 0.0) r = y < 0.0 ? uintBitsToFloat(0x7f800000u) : 0.0;
    if (isinf(y)) r = abs(x) == 1.0 ? 1.0 : ((abs(x) > 1.0) == (y > 0.0)
        ? uintBitsToFloat(0x7f800000u) : 0.0);
    if (isinf(y)) return r;
    // A finite negative base needs an integral exponent; a negative one (-0 and -inf
    // too) gives the result the sign of an odd one.
    if (x < 0.0 && !isinf(x) && trunc(y) != y) return uintBitsToFloat(0x7fc00000u);
    if ((floatBitsToUint(x) >> 31) != 0u && trunc(y) == y && abs(y) < 16777216.0
        && (int(abs(y)) & 1) == 1) r = -r;
    return r;
}""",
}


# ---------------------------------------------------------------- f64 functions
# GLSL has no double-precision exp, log, sin, cos, tan, atan...: these are written here
# from +, -, *, /, sqrt and floor (exact or correctly rounded in IEEE double), with the
# reductions that keep them within a few ulp (measured on lavapipe against the host's
# libm: <= 5e-16 relative, erf 2e-15, over the whole double range; tests/test_f64_math.py):
# - exp: x = k ln2 + r, |r| <= ln2/2, with ln2 in two parts (the first of 32 bits,
#   so k*LN2_HI is exact for every k); exp(r) by its Taylor series to r^14 (the rest
#   is below 1e-18); 2^k applied through the exponent bits, in two steps at the ends.
# - exp2: x = k + f, k the nearest integer (f = x - k is exact), 2^f = exp(f ln2) by
#   exp's series, 2^k as for exp.
# - log: x = 2^e m with m in [sqrt(1/2), sqrt(2)] (subnormals scaled by 2^54 first);
#   log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172, its odd series to s^23.
#   log2 = e + log(m)/ln2 (exact at powers of 2).
# - sin, cos, tan: below 2^20, Cody-Waite reduction by pi/2 in three parts (33, 33, 53
#   bits: the products by k < 2^20 are exact); beyond, Payne-Hanek (the mantissa
#   times the 192 bits of 2/pi at its exponent, in integer words); then Taylor series
#   on [-pi/4, pi/4] to r^19 / r^18, the quadrant choosing sin or cos and the sign
#   (tan: sin(r)/cos(r), or -cos(r)/sin(r) in odd quadrants).
# - tanh = expm1(2|x|) / (expm1(2|x|) + 2), with expm1 by its series below 0.5.
# - erf by the series of positive terms 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1)/(2n+1)!!
#   (no cancellation), summed to a relative 1e-17; +-1 from |x| >= 6.
# - pow = exp(y log|x|) with C's special cases (as the f32 one): relative error about
#   |y log x| ulp, 3e-13 at worst (results near the ends of the double range).
# - atan, atan2, asin, acos, sinh, cosh, log1p, hypot, copysign: as the f32 ones
#   (``_precision_helpers``), with longer series.
# `precise` keeps the driver from reassociating the reductions.


# The bits of 2/pi (0.a2f9836e...), 32 to a word, after 64 zero bits: enough for the
# Payne-Hanek reduction of every finite double (tests/test_f64_math.py rederives them).
_TWO_OVER_PI = (
    0x00000000, 0x00000000, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
    0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561, 0xb7246e3a, 0x424dd2e0,
    0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b,
    0x1ff897ff, 0xde05980f, 0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7,
    0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea,
    0x6bfb5fb1, 0x1f8d5d08, 0x56033046, 0xfc7b6bab, 0xf0cfbc20, 0x9af4361d,
    0xa9e39161, 0x5ee61b08,
)
# pi and ln 2 to 60 digits, for the constants split into a rounded part and the rest.
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")
_LN2 = Fraction("0.693147180559945309417232121458176568075500134360255254120680009")


def _lit(v: Fraction | float, elem: Elem) -> str:
    """A finite constant as an f32 or f64 GLSL literal, rounded to nearest."""
    if elem is Elem.F64:
        return f"{float(v)!r}lf"
    return repr(float(np.float32(float(v))))


def _split(v: Fraction, elem: Elem) -> tuple[str, str]:
    """``v`` as two literals: ``v`` rounded to ``elem``, and the rest rounded."""
    hi = float(v) if elem is Elem.F64 else float(np.float32(float(v)))
    return _lit(hi, elem), _lit(v - Fraction(hi), elem)


def _horner(var: str, coeffs: list[Fraction], elem: Elem = Elem.F64) -> str:
    """``c0 + var * (c1 + var * (...))`` with literals of ``elem`` (rounded to nearest)."""
    text = _lit(coeffs[-1], elem)
    for c in reversed(coeffs[:-1]):
        text = f"{_lit(c, elem)} + {var} * ({text})"
    return text


def _specials(elem: Elem) -> tuple[str, str]:
    """Infinity and a quiet NaN of ``elem``, as GLSL expressions."""
    if elem is Elem.F64:
        return ("packDouble2x32(uvec2(0u, 0x7ff00000u))",
                "packDouble2x32(uvec2(0u, 0x7ff80000u))")
    return "uintBitsToFloat(0x7f800000u)", "uintBitsToFloat(0x7fc00000u)"


def _f64_helpers() -> dict[str, str]:
    """The f64 functions of the comment above, keyed as :data:`_DEPS` knows them."""
    fact = math.factorial
    exp_poly = _horner("r", [Fraction(1, fact(n)) for n in range(15)])
    expm1_poly = _horner("x", [Fraction(1, fact(n)) for n in range(1, 19)])
    log_poly = _horner("z", [Fraction(2, 2 * n + 1) for n in range(1, 12)])
    sin_poly = _horner("z", [Fraction((-1) ** n, fact(2 * n + 1)) for n in range(1, 10)])
    cos_poly = _horner("z", [Fraction((-1) ** n, fact(2 * n)) for n in range(1, 10)])
    table = ", ".join(f"{w:#010x}u" for w in _TWO_OVER_PI)
    inf, nan = _specials(Elem.F64)
    return {
        "pow2_d": """\
double _pow2_d(int k) { return packDouble2x32(uvec2(0u, uint(k + 1023) << 20)); }
// p 2^k for k of -1075..1024: in two steps where 2^k is no (normal) double, the first
// exact, so a subnormal result is rounded once.
double _scale_d(double p, int k) {
    if (k > 1023) return p * 2.0lf * _pow2_d(k - 1);
    if (k < -1022) return (p * _pow2_d(k + 54)) * _pow2_d(-54);
    return p * _pow2_d(k);
}""",
        "exp_d": f"""\
double _exp_d(double x) {{
    if (isnan(x)) return x;
    if (x > 709.782712893384lf) return {inf};
    if (x < -745.1332191019412lf) return 0.0lf;
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    precise double r = (x - k * 0.6931471806019545lf) - k * -4.2009150726810846e-11lf;
    return _scale_d({exp_poly}, int(k));
}}""",
        "exp2_d": f"""\
double _exp2_d(double x) {{
    if (isnan(x)) return x;
    if (x >= 1024.0lf) return {inf};
    if (x < -1075.0lf) return 0.0lf;
    double k = floor(x + 0.5lf);
    double r = (x - k) * 0.6931471805599453lf;
    return _scale_d({exp_poly}, int(k));
}}""",
        "expm1_d": f"""\
double _expm1_d(double x) {{
    if (abs(x) < 0.5lf) return x * ({expm1_poly});
    return _exp_d(x) - 1.0lf;
}}""",
        "logm_d": f"""\
// x = 2^e m, m in [sqrt(1/2), sqrt(2)], for a finite x > 0: de = e, log(m) = hi + lo.
void _logm_d(double x, out double de, out double hi, out double lo) {{
    int e = 0;
    if (x < 2.2250738585072014e-308lf) {{ x *= 18014398509481984.0lf; e = -54; }}
    uvec2 w = unpackDouble2x32(x);
    e += int(w.y >> 20) - 1023;
    double m = packDouble2x32(uvec2(w.x, (w.y & 0x000fffffu) | 0x3ff00000u));
    if (m > 1.4142135623730951lf) {{ m *= 0.5lf; e += 1; }}
    de = double(e);
    precise double f = m - 1.0lf;
    precise double s = f / (2.0lf + f);
    double z = s * s;
    hi = s * 2.0lf;
    lo = s * z * ({log_poly});
}}""",
        "log_d": f"""\
double _log_d(double x) {{
    if (isnan(x) || x < 0.0lf) return {nan};
    if (x == 0.0lf) return -{inf};
    if (isinf(x)) return x;
    double de, hi, lo;
    _logm_d(x, de, hi, lo);
    precise double t = lo + de * -4.2009150726810846e-11lf;
    return de * 0.6931471806019545lf + (hi + t);
}}""",
        "reduce_big_d": f"""\
const uint _TWO_OVER_PI[{len(_TWO_OVER_PI)}] = uint[]({table});
void _acc_d(inout uint res[8], int i, uint v) {{
    for (int j = i; j < 8 && v != 0u; j++) {{ uint c; res[j] = uaddCarry(res[j], v, c); v = c; }}
}}
// Payne-Hanek: x = (4n + quad) pi/2 + r, |r| <= pi/4, for |x| >= 2^20. The 53-bit
// mantissa times the 192 bits of 2/pi that matter at its exponent, in 32-bit words:
// the two bits above the product's fraction are the quadrant.
double _reduce_big_d(double x, out int quad) {{
    uvec2 w = unpackDouble2x32(abs(x));
    uint mlo = w.x, mhi = (w.y & 0x000fffffu) | 0x00100000u;
    int off = int(w.y >> 20) - 1075 + 62;
    int wi = off >> 5, sh = off & 31;
    uint a[6], res[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u), hi, lo;
    for (int k = 0; k < 6; k++) {{
        uint top = _TWO_OVER_PI[wi + 5 - k], next = _TWO_OVER_PI[wi + 6 - k];
        a[k] = sh == 0 ? top : ((top << sh) | (next >> (32 - sh)));
    }}
    for (int i = 0; i < 6; i++) {{
        umulExtended(mlo, a[i], hi, lo);
        _acc_d(res, i, lo); _acc_d(res, i + 1, hi);
        umulExtended(mhi, a[i], hi, lo);
        _acc_d(res, i + 1, lo); _acc_d(res, i + 2, hi);
    }}
    int q = int(res[5] >> 30);
    uint f[6];
    for (int i = 5; i > 0; i--) f[i] = (res[i] << 2) | (res[i - 1] >> 30);
    f[0] = res[0] << 2;
    bool neg = (f[5] >> 31) != 0u;
    if (neg) {{
        q += 1;
        uint c = 1u;
        for (int i = 0; i < 6; i++) {{ uint n; f[i] = uaddCarry(~f[i], c, n); c = n; }}
    }}
    int t = 5;
    while (t > 2 && f[t] == 0u) t--;
    double d = (double(f[t]) * 4294967296.0lf + double(f[t - 1])) * 4294967296.0lf
        + double(f[t - 2]);
    double r = d * _pow2_d(32 * (t - 2) - 192) * 1.5707963267948966lf;
    if (neg) r = -r;
    if (x < 0.0lf) {{ q = -q; r = -r; }}
    quad = q & 3;
    return r;
}}""",
        "reduce_d": """\
// x = (4n + quad) pi/2 + r, |r| <= pi/4, for a finite x.
double _reduce_d(double x, out int quad) {
    if (abs(x) >= 1048576.0lf) return _reduce_big_d(x, quad);
    double k = floor(x * 0.6366197723675814lf + 0.5lf);
    quad = int(k - 4.0lf * floor(k * 0.25lf));
    precise double r = ((x - k * 1.5707963267341256lf) - k * 6.077100506303966e-11lf)
        - k * 2.0222662487959506e-21lf;
    return r;
}""",
        "sincos_d": f"""\
// sin(x) for q == 0, cos(x) for q == 1.
double _sincos_d(double x, int q) {{
    if (isnan(x) || isinf(x)) return {nan};
    int quad;
    double r = _reduce_d(x, quad);
    double z = r * r;
    quad = (quad + q) & 3;
    double v = (quad & 1) == 1 ? 1.0lf + z * ({cos_poly})
                               : r + r * z * ({sin_poly});
    return (quad & 2) == 2 ? -v : v;
}}""",
        "sin_d": "double _sin_d(double x) { return _sincos_d(x, 0); }",
        "cos_d": "double _cos_d(double x) { return _sincos_d(x, 1); }",
        "tan_d": f"""\
double _tan_d(double x) {{
    if (isnan(x) || isinf(x)) return {nan};
    if (abs(x) < 7.450580596923828e-09lf) return x;  // x rounded is tan(x) below 2^-27; -0
    int quad;
    double r = _reduce_d(x, quad);
    double z = r * r;
    double s = r + r * z * ({sin_poly}), c = 1.0lf + z * ({cos_poly});
    return (quad & 1) == 1 ? -c / s : s / c;
}}""",
        "tanh_d": """\
double _tanh_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x), r = 1.0lf;
    if (a < 22.0lf) { double e = _expm1_d(2.0lf * a); r = e / (e + 2.0lf); }
    return x < 0.0lf ? -r : r;
}""",
        "erf_d": """\
double _erf_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x), r = 1.0lf;
    if (a < 6.0lf) {
        double x2 = a * a, t = a, s = a;
        for (int n = 1; n < 200 && t > s * 1e-17lf; n++) {
            t = t * 2.0lf * x2 / double(2 * n + 1);
            s += t;
        }
        r = min(1.1283791670955126lf * _exp_d(-x2) * s, 1.0lf);
    }
    return x < 0.0lf ? -r : r;
}""",
        "pow_d": f"""\
double _pow_d(double x, double y) {{
    if (y == 0.0lf || x == 1.0lf) return 1.0lf;
    if (isnan(x) || isnan(y)) return x + y;
    double r = _exp_d(y * _log_d(abs(x)));
    if (x == 0.0lf) r = y < 0.0lf ? {inf} : 0.0lf;
    if (isinf(y)) r = abs(x) == 1.0lf ? 1.0lf : ((abs(x) > 1.0lf) == (y > 0.0lf)
        ? {inf} : 0.0lf);
    if (isinf(y)) return r;
    if (x < 0.0lf && !isinf(x) && trunc(y) != y) return {nan};
    if ((unpackDouble2x32(x).y >> 31) != 0u && trunc(y) == y
        && abs(y) < 9007199254740992.0lf && trunc(y * 0.5lf) * 2.0lf != y) r = -r;
    return r;
}}""",
        "copysign_d": """\
double _copysign_d(double x, double y) {
    uvec2 a = unpackDouble2x32(x);
    a.y = (a.y & 0x7fffffffu) | (unpackDouble2x32(y).y & 0x80000000u);
    return packDouble2x32(a);
}""",
    }


# ---------------------------------------------------------------- f32 functions
# What the f32 ones of ``_precision_helpers`` build on, from +, -, *, / (exp(x) - 1
# loses the digits of a small x, and lavapipe's f32 log is accurate near 1 only in
# absolute terms: these keep a relative accuracy of about 1 ulp):
# - expm1: x = k ln2 + r as for f64's exp, expm1(r) by its series to r^8 (the rest
#   below 6e-10 of r), then 2^k expm1(r) + (2^k - 1), both parts exact or nearly.
# - the log core: x = 2^e m, m in [sqrt(1/2), sqrt(2)], log(m) = 2 atanh(s) with
#   s = (m-1)/(m+1), its odd series to s^13.


def _f32_helpers() -> dict[str, str]:
    """The f32 cores of the comment above, keyed as :data:`_DEPS` knows them."""
    fact, f32 = math.factorial, Elem.F32
    expm1_poly = _horner("r", [Fraction(1, fact(n)) for n in range(1, 9)], f32)
    log_poly = _horner("z", [Fraction(2, 2 * n + 1) for n in range(1, 7)], f32)
    inf, _ = _specials(f32)
    # ln2 with 15 bits first: k*LN2_HI is exact for every k an f32 exp can have.
    ln2_hi = Fraction(round(_LN2 * 2 ** 15), 2 ** 15)
    hi, lo = _lit(ln2_hi, f32), _lit(_LN2 - ln2_hi, f32)
    return {
        "pow2": "float _pow2(int k) { return uintBitsToFloat(uint(k + 127) << 23); }",
        "expm1": f"""\
float _expm1(float x) {{
    if (isnan(x)) return x;
    if (x > 88.72283905206835) return {inf};
    if (x < -17.5) return -1.0;
    float k = floor(x * 1.44269504 + 0.5);
    precise float r = (x - k * {hi}) - k * {lo};
    float p = r * ({expm1_poly});
    int ik = int(k);
    if (ik == 0) return p;
    if (ik > 24) return (p + 1.0) * 2.0 * _pow2(ik - 1);
    return p * _pow2(ik) + (_pow2(ik) - 1.0);
}}""",
        "logm": f"""\
// x = 2^e m, m in [sqrt(1/2), sqrt(2)], for a finite x > 0: de = e, log(m) = hi + lo.
void _logm(float x, out float de, out float hi, out float lo) {{
    int e = 0;
    if (x < 1.17549435e-38) {{ x *= 16777216.0; e = -24; }}
    uint w = floatBitsToUint(x);
    e += int(w >> 23) - 127;
    float m = uintBitsToFloat((w & 0x007fffffu) | 0x3f800000u);
    if (m > 1.41421356) {{ m *= 0.5; e += 1; }}
    de = float(e);
    precise float f = m - 1.0;
    precise float s = f / (2.0 + f);
    float z = s * s;
    hi = s * 2.0;
    lo = s * z * ({log_poly});
}}""",
        "copysign": """\
float _copysign(float x, float y) {
    return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu)
                           | (floatBitsToUint(y) & 0x80000000u));
}""",
    }


def _precision_helpers(elem: Elem) -> dict[str, str]:
    """The functions written alike for f32 and f64 (``_atan`` and ``_atan_d``...), on
    the cores of their precision:

    - atan: |x| > 1 as pi/2 - atan(1/|x|); then above tan(pi/8) pi/4 + atan(t) with
      t = (a-1)/(a+1), so |t| <= tan(pi/8) for the odd Taylor series (to t^19 in f32,
      t^41 in f64); pi/2 and pi/4 in two parts. The sign copied (atan(-0) = -0).
    - atan2: C's special cases (the zeros' signs choose 0 or pi, infinities pi/4...),
      else atan of the quotient that is at most 1, moved to its quadrant.
    - asin x = atan2(x, sqrt((1-x)(1+x))), acos x = atan2(sqrt((1-x)(1+x)), x): the
      factors exact or rounded once, and no cancellation near +-1.
    - sinh, cosh from expm1(|x|) (no cancellation near 0); past 88 (f32) or 709 (f64),
      where exp(|x|) overflows before they do, as (exp(|x|/2) / 2) exp(|x|/2).
    - log2 = e + log(m)/ln2; log1p = log(u) + c/u, u = 1 + x rounded and c = 1 + x - u
      exactly (Fast2Sum), so the digits of a small x that u loses come back.
    - hypot = m sqrt(1 + (n/m)^2), m and n the larger and smaller magnitude: no
      overflow or underflow in between; an infinity wins over a NaN.
    """
    f64 = elem is Elem.F64
    t, s = ("double", "_d") if f64 else ("float", "")
    inf, nan = _specials(elem)

    def c(v: Fraction | float) -> str:
        return _lit(v, elem)

    one, zero, half = c(1), c(0), c(0.5)
    pi, pi_lo = _split(_PI, elem)
    pio2, pio2_lo = _split(_PI / 2, elem)
    pio4, pio4_lo = _split(_PI / 4, elem)
    ln2_hi = Fraction(round(_LN2 * 2 ** (32 if f64 else 15)), 2 ** (32 if f64 else 15))
    signbit = "(unpackDouble2x32(x).y >> 31) != 0u" if f64 else "(floatBitsToUint(x) >> 31) != 0u"
    atan_poly = _horner("z", [Fraction((-1) ** k, 2 * k + 1) for k in range(1, 21 if f64 else 10)],
                        elem)
    big = c(709) if f64 else c(88)
    return {
        f"atanr{s}": f"""\
// atan(a) for a in [0, 1].
{t} _atanr{s}({t} a) {{
    {t} hi = {zero}, lo = {zero};
    if (a > {c(0.41421356237309503)}) {{
        a = (a - {one}) / (a + {one});
        hi = {pio4};
        lo = {pio4_lo};
    }}
    {t} z = a * a;
    return hi + (a + (a * z * ({atan_poly}) + lo));
}}""",
        f"atan{s}": f"""\
{t} _atan{s}({t} x) {{
    if (isnan(x)) return x;
    {t} a = abs(x);
    {t} r = a > {one} ? {pio2} - (_atanr{s}({one} / a) - {pio2_lo}) : _atanr{s}(a);
    return _copysign{s}(r, x);
}}""",
        f"atan2{s}": f"""\
{t} _atan2{s}({t} y, {t} x) {{
    if (isnan(x) || isnan(y)) return x + y;
    {t} ay = abs(y), ax = abs(x), r;
    bool xneg = {signbit};
    if (ay == {zero} || (isinf(ax) && !isinf(ay))) r = xneg ? {pi} : {zero};
    else if (isinf(ax)) r = xneg ? {c(3 * _PI / 4)} : {pio4};
    else if (ax == {zero} || isinf(ay)) r = {pio2};
    else {{
        r = ay <= ax ? _atanr{s}(ay / ax) : {pio2} - (_atanr{s}(ax / ay) - {pio2_lo});
        if (xneg) r = {pi} - (r - {pi_lo});
    }}
    return _copysign{s}(r, y);
}}""",
        f"asin{s}": f"""\
{t} _asin{s}({t} x) {{ return _atan2{s}(x, sqrt(({one} - x) * ({one} + x))); }}""",
        f"acos{s}": f"""\
{t} _acos{s}({t} x) {{ return _atan2{s}(sqrt(({one} - x) * ({one} + x)), x); }}""",
        f"sinh{s}": f"""\
{t} _sinh{s}({t} x) {{
    {t} a = abs(x), r;
    if (a > {big}) {{
        {t} h = _expm1{s}({half} * a) + {one};
        r = ({half} * h) * h;
    }} else {{
        {t} e = _expm1{s}(a);
        r = {half} * (e + e / (e + {one}));
    }}
    return _copysign{s}(r, x);
}}""",
        f"cosh{s}": f"""\
{t} _cosh{s}({t} x) {{
    {t} a = abs(x);
    if (a > {big}) {{
        {t} h = _expm1{s}({half} * a) + {one};
        return ({half} * h) * h;
    }}
    {t} e = _expm1{s}(a) + {one};
    return {half} * e + {half} / e;
}}""",
        f"log2{s}": f"""\
{t} _log2{s}({t} x) {{
    if (isnan(x) || x < {zero}) return {nan};
    if (x == {zero}) return -{inf};
    if (isinf(x)) return x;
    {t} de, hi, lo;
    _logm{s}(x, de, hi, lo);
    return de + (hi + lo) * {c(1 / _LN2)};
}}""",
        f"log1p{s}": f"""\
{t} _log1p{s}({t} x) {{
    if (isnan(x)) return x;
    if (x < -{one}) return {nan};
    if (x == -{one}) return -{inf};
    if (isinf(x) || x == {zero}) return x;  // -0 too
    precise {t} u = {one} + x;
    precise {t} err = abs(x) <= {one} ? ({one} - u) + x : (x - u) + {one};
    {t} de, hi, lo;
    _logm{s}(u, de, hi, lo);
    precise {t} rest = lo + (err / u + de * {c(_LN2 - ln2_hi)});
    return de * {c(ln2_hi)} + (hi + rest);
}}""",
        f"hypot{s}": f"""\
{t} _hypot{s}({t} x, {t} y) {{
    {t} a = abs(x), b = abs(y);
    if (isinf(a) || isinf(b)) return {inf};
    if (isnan(a) || isnan(b)) return a + b;
    {t} m = max(a, b), n = min(a, b);
    if (m == {zero}) return {zero};
    {t} q = n / m;
    return m * sqrt({one} + q * q);
}}""",
    }


_HELPERS.update(_f64_helpers())
_HELPERS.update(_f32_helpers())
_HELPERS.update(_precision_helpers(Elem.F32))
_HELPERS.update(_precision_helpers(Elem.F64))
# The f64 function of each C function GLSL has not for double (their keys in _HELPERS).
_F64_FNS = {"exp": "exp_d", "log": "log_d", "sin": "sin_d", "cos": "cos_d",
            "tanh": "tanh_d", "erf": "erf_d", "pow": "pow_d", "tan": "tan_d",
            "asin": "asin_d", "acos": "acos_d", "atan": "atan_d", "atan2": "atan2_d",
            "sinh": "sinh_d", "cosh": "cosh_d", "log2": "log2_d", "exp2": "exp2_d",
            "log1p": "log1p_d", "expm1": "expm1_d", "copysign": "copysign_d",
            "hypot": "hypot_d"}
# The helpers each helper calls (defined before it).
_DEPS: dict[str, tuple[str, ...]] = {
    "exp_d": ("pow2_d",), "exp2_d": ("pow2_d",), "expm1_d": ("exp_d",),
    "reduce_big_d": ("pow2_d",), "reduce_d": ("reduce_big_d",), "sincos_d": ("reduce_d",),
    "sin_d": ("sincos_d",), "cos_d": ("sincos_d",), "tan_d": ("reduce_d",),
    "log_d": ("logm_d",), "tanh_d": ("expm1_d",), "erf_d": ("exp_d",),
    "pow_d": ("exp_d", "log_d"), "expm1": ("pow2",),
}
for _s in ("", "_d"):
    _DEPS.update({
        f"atan{_s}": (f"atanr{_s}", f"copysign{_s}"),
        f"atan2{_s}": (f"atanr{_s}", f"copysign{_s}"),
        f"asin{_s}": (f"atan2{_s}",), f"acos{_s}": (f"atan2{_s}",),
        f"sinh{_s}": (f"expm1{_s}", f"copysign{_s}"), f"cosh{_s}": (f"expm1{_s}",),
        f"log2{_s}": (f"logm{_s}",), f"log1p{_s}": (f"logm{_s}",),
    })


def _float_text(v: float, elem: Elem) -> str:
    if elem is Elem.F64:
        if math.isfinite(v):
            return f"{v!r}lf"
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        return f"packDouble2x32(uvec2({bits & 0xFFFFFFFF}u, {bits >> 32}u))"
    f32 = float(np.float32(v))
    if math.isfinite(f32):
        # repr is the shortest text that reads back as the same f32 value.
        text = repr(f32)
    else:
        text = f"uintBitsToFloat({int(np.float32(f32).view(np.uint32)):#010x}u)"
    return text if elem is Elem.F32 else f"float16_t({text})"


class GlslDialect(StandardC):
    """GLSL 450 for one device's :class:`ShaderFeatures`, as the module says; made per
    kernel, since it allots the kernel's info words."""

    backend = "vulkan"
    types = _TYPES
    bool_memory = "uint8_t"
    int_suffixes: Mapping[Elem, str] = {Elem.I32: "", Elem.U32: "u", Elem.I64: "l",
                                        Elem.U64: "ul"}
    function_prefix = ""
    signed_wraps = True
    barrier = "groupMemoryBarrier(); barrier();"  # orders shared and buffer memory, waits
    unroll = "[[unroll]]"
    line_sizes = (1, 2, 4, 8, 16)
    vector_ops = True

    def __init__(self, features: ShaderFeatures) -> None:
        self.f = features
        self.info = InfoWords()
        self.grid: dict[ir.BuiltinName, str] = {}  # the cube builtins, from fold_grid
        self.bit_views: set[str] = set()  # f32 arrays also declared as uint (atomics)
        self.local_sizes: dict[str, int] = {}  # each local array's, by its GLSL name

    def _helper(self, e: CEmitter, key: str, elem: Elem | None = None) -> None:
        name = key if elem is None else f"{key}:{elem.value}"
        e.helper(name, lambda: _HELPERS[key] if elem is None
                 else _HELPERS[key].format(T=_TYPES[elem]))

    def prepare(self, e: CEmitter) -> None:
        """Refuse what the device cannot run; allot the scalars' and count's words."""
        total, f = math.prod(e.dim), self.f
        if total > f.max_invocations:
            e.fail(f"cube dim {e.dim} has {total} units; the device allows "
                   f"{f.max_invocations} (maxComputeWorkGroupInvocations)")
        for axis, (d, m) in enumerate(zip(e.dim, f.max_workgroup_size, strict=False)):
            if d > m:
                e.fail(f"cube dim {e.dim}: axis {'xyz'[axis]} exceeds the device's "
                       f"maxComputeWorkGroupSize {tuple(f.max_workgroup_size)}")
        if e.shared_bytes > f.max_shared_bytes:
            e.fail(f"shared arrays take {e.shared_bytes} bytes; the device allows "
                   f"{f.max_shared_bytes} (maxComputeSharedMemorySize)")
        for i, p in enumerate(e.scalars.values()):
            self.info.word("scalar", i, 0, 2 if p.elem.bits == 64 else 1)
        self.info.word("count", 0, 0, 3)
        self.local_sizes = {f"a_{e.stems[a.name]}": a.size for a in e.kernel.local_arrays}
        if any(isinstance(n, ir.For) and n.unroll for n in ir.walk(e.kernel.body)):
            e.need("GL_EXT_control_flow_attributes")

    def use_type(self, e: CEmitter, elem: Elem, what: str, memory: bool) -> None:
        """Refuse what the device lacks; enable the extensions a type needs."""
        f = self.f
        if elem is Elem.F64 and not f.float64:
            e.fail(f"{what} is f64, but the device lacks shaderFloat64")
        if elem in (Elem.I64, Elem.U64):
            if not f.int64:
                e.fail(f"{what} is {elem.value}, but the device lacks shaderInt64")
            e.need("GL_EXT_shader_explicit_arithmetic_types_int64")
        if elem is Elem.F16:
            if not f.float16:
                e.fail(f"{what} is f16, but the device lacks shaderFloat16 with "
                       "16-bit storage")
            e.need("GL_EXT_shader_explicit_arithmetic_types_float16")
            e.need("GL_EXT_shader_16bit_storage")
        if elem is Elem.BOOL and memory:
            if not f.bool_storage:
                e.fail(f"{what} holds bool, which needs storageBuffer8BitAccess")
            e.need("GL_EXT_shader_8bit_storage")
            e.need("GL_EXT_shader_explicit_arithmetic_types_int8")

    def float_literal(self, value: float, elem: Elem) -> str:
        """Decimal (exact: the shortest that reads back); bit patterns where not finite."""
        return _float_text(value, elem)

    def convert(self, type_name: str, x: str) -> str:
        """A constructor (between integers of one width it keeps the bits)."""
        return f"{type_name}({x})"

    def cast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """Constructors; to and from f16 through f32 where GLSL has no direct one, or
        no correctly rounded one."""
        if src is Elem.F64 and dst is Elem.F16:
            self._helper(e, "f64_to_f16")
            return f"_f64_to_f16({x})"
        if (src is Elem.F16 or dst is Elem.F16) and dst is not Elem.BOOL:
            if src is Elem.BOOL or (src.is_int and src.bits == 64):
                x = f"float({x})"
            elif dst.is_int and dst.bits == 64:
                return f"{_TYPES[dst]}(float({x}))"
        return super().cast(e, x, src, dst)

    def math(self, e: CEmitter, fn: str, args: list[str], t: Elem) -> str:
        """GLSL's where it has the IR's meaning, helpers here where not; f16 in f32."""
        if fn in ("isnan", "isinf", "fma"):
            return f"{fn}({', '.join(args)})"
        if fn == "fabs":
            return f"abs({args[0]})"
        if fn in ("fmin", "fmax"):
            self._helper(e, "fminmax", t)
            return f"_{fn}({args[0]}, {args[1]})"
        if fn == "fmod":
            self._helper(e, "fmod", Elem.F32 if t is Elem.F16 else t)  # f16's is exact in f32
            if t is Elem.F16:
                return f"float16_t(_fmod(float({args[0]}), float({args[1]})))"
            return f"_fmod({args[0]}, {args[1]})"
        if t is Elem.F64 and fn in _DOUBLE_FNS:
            return f"{_GLSL_FNS[fn]}({args[0]})"
        if t is Elem.F64:
            self._helper_and_deps(e, _F64_FNS[fn])
            return f"_{_F64_FNS[fn]}({', '.join(args)})"
        if fn == "copysign" and t is Elem.F16:
            # On the bits (the sign of a NaN too), each f16 in the low half of a word.
            x, y = (f"packFloat2x16(f16vec2({a}))" for a in args)
            return f"unpackFloat2x16(({x} & 0x7fffu) | ({y} & 0x8000u)).x"
        xs = args if t is Elem.F32 else [f"float({x})" for x in args]
        if fn in _GLSL_FNS:
            call = f"{_GLSL_FNS[fn]}({xs[0]})"
        else:
            self._helper_and_deps(e, fn)
            call = f"{_OWN_FNS[fn]}({', '.join(xs)})"
        return call if t is Elem.F32 else f"float16_t({call})"

    def _helper_and_deps(self, e: CEmitter, key: str) -> None:
        for dep in _DEPS.get(key, ()):
            self._helper_and_deps(e, dep)
        self._helper(e, key)

    def bitcast(self, e: CEmitter, x: str, src: Elem, dst: Elem) -> str:
        """GLSL's bit-cast functions; 64-bit floats through a pair of words; between
        integers of one width a constructor."""
        if src.is_int and dst.is_int:
            return self.convert(self.types[dst], x)
        if src is Elem.F32:
            return f"floatBitsTo{'Uint' if dst is Elem.U32 else 'Int'}({x})"
        if dst is Elem.F32:
            return f"{'uint' if src is Elem.U32 else 'int'}BitsToFloat({x})"
        if src is Elem.F64:
            bits = f"packUint2x32(unpackDouble2x32({x}))"
            return bits if dst is Elem.U64 else f"int64_t({bits})"
        return f"packDouble2x32(unpackUint2x32({x if src is Elem.U64 else f'uint64_t({x})'}))"

    def builtin(self, e: CEmitter, name: ir.BuiltinName) -> str | None:
        """GLSL's, and the cube position and count the prologue computes."""
        if name in (B.PLANE_DIM, B.UNIT_POS_PLANE):
            self._subgroups(e, name.value)
        return self.grid.get(name) or _BUILTINS.get(name)

    def metadata(self, e: CEmitter, kind: str, array: ir.Param, dim: int) -> str:
        """A word of the info buffer."""
        return f"meta_[{self.info.word(kind, list(e.arrays).index(array.name), dim)}]"

    def subscript(self, array: ArrayRef, index: str, index_type: Elem) -> str:
        """``a[i]``, a 64-bit index as ``uint``; into a local array clamped to its last
        element: glslang rejects a constant index past the end even in code that a
        bounds check skips. The clamp changes nothing in checked mode, whose test
        comes first; in unchecked mode an index outside has no meaning anyway."""
        i = index if index_type.bits == 32 else f"uint({index})"
        if array.local:
            i = f"min({i}, {self.local_sizes[array.text] - 1}u)"
        return f"{array.text}[{i}]"

    def checked_load(self, e: CEmitter, array: ArrayRef, index: str,
                     index_type: Elem) -> str:
        """A function per array and index type (GLSL has no pointers to pass); a local
        array, which no function outside ``main`` sees, inline or passed by value."""
        it, mt = e.ctype(index_type), e.mtype(array.elem)
        zero = self.to_memory(e.literal(0, array.elem), array.elem)
        bound = e.bound(array, index_type)
        if array.local and "subgroup" not in index and "_broadcast(" not in index:
            return f"({index} < {bound} ? {self.subscript(array, index, index_type)} : {zero})"
        name = f"ld_{array.text}_{index_type.value}"
        # A local array's index holding a plane operation is evaluated once, outside
        # any branch (every unit must reach it): the array is copied in instead.
        size = e.local_arrays[array.name].size if array.local else 0
        params = f"{mt} {array.text}[{size}], {it} i" if array.local else f"{it} i"
        e.helper(name, lambda: (
            f"{mt} {name}({params}) {{ return i < {bound} ? "
            f"{self.subscript(array, 'i', index_type)} : {zero}; }}"))
        return f"{name}({array.text + ', ' if array.local else ''}{index})"

    def vector_type(self, e: CEmitter, elem: Elem, size: int) -> str | None:
        """GLSL's vectors of 2 and 4; None past 4."""
        return f"{_VECTORS[elem]}{size}" if size <= 4 else None

    def component(self, x: str, k: int, size: int) -> str:
        """``x.x``, ``x.y``, ``x.z``, ``x.w``."""
        return f"{x}.{'xyzw'[k]}"

    def vector_make(self, e: CEmitter, type_name: str, parts: list[str]) -> str:
        """A constructor."""
        return f"{type_name}({', '.join(parts)})"

    def vector_fill(self, e: CEmitter, type_name: str, x: str) -> str | None:
        """A constructor of one value (GLSL fills every element with it)."""
        return f"{type_name}({x})"

    def struct_decl(self, e: CEmitter, name: str, member: str, size: int) -> str:
        """``struct name { T v[N]; };``."""
        return f"struct {name} {{ {member} v[{size}]; }};"

    def struct_make(self, e: CEmitter, name: str, member: str, parts: list[str]) -> str:
        """The struct's constructor from an array constructor."""
        return f"{name}({member}[{len(parts)}]({', '.join(parts)}))"

    def load_line(self, e: CEmitter, array: ArrayRef, index: str, index_type: Elem,
                  t: ir.Line) -> str:
        """A function per array and index type (GLSL has no pointers to pass)."""
        it = e.ctype(index_type)
        name = f"ldl_{array.text}_{index_type.value}"
        e.helper(name, lambda: e.function(
            e.ctype(t), name, [(it, "n"), (it, "i")],
            e.line_load_body(t, index_type, lambda j: self.subscript(array, j, index_type))))
        return f"{name}({e.bound(array, index_type)}, {index})"

    def atomic(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
               operands: list[str]) -> str:
        """GLSL's atomics on the element itself; subtraction as adding the negation;
        f32 max and min by a compare-exchange loop (:meth:`_atomic_fminmax`)."""
        t = array.elem
        if t is Elem.F32 and op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN):
            return self._atomic_fminmax(e, op, array, element, operands[-1])
        if t in (Elem.I64, Elem.U64):
            if not self.f.int64_atomics:
                e.fail(f"atomic {op.value} on {t.value} needs the device's "
                       "shaderBufferInt64Atomics/shaderSharedInt64Atomics")
            e.need("GL_EXT_shader_atomic_int64")
        elif t is Elem.F32:  # add (and exchange): the float atomics of the extension
            if not self.f.float32_atomic_add:
                e.fail(f"atomic {op.value} on f32 needs VK_EXT_shader_atomic_float")
            e.need("GL_EXT_shader_atomic_float")
        values = list(operands)
        if op is ir.AtomicOp.SUB:
            values[-1] = f"({e.literal(0, t)} - {values[-1]})"
        return f"{_ATOMIC_FNS[op]}({element}, {', '.join(values)})"

    def _atomic_fminmax(self, e: CEmitter, op: ir.AtomicOp, array: ArrayRef, element: str,
                        value: str) -> str:
        """``fmax``/``fmin`` into an f32 element, on its bits through a ``uint`` view of
        the same buffer (a second block at its binding): where u32 atomics are, and
        with C's NaN rules, which the float min/max atomics of
        VK_EXT_shader_atomic_float2 leave undefined."""
        fn = "fmax" if op is ir.AtomicOp.MAX else "fmin"
        if array.shared:
            # GLSL cannot view a shared float array as uint (no aliasing of shared
            # variables without GL_EXT_shared_memory_block).
            e.fail(f"atomic {op.value} on the f32 shared array {array.name!r}: the vulkan "
                   "backend has it on global arrays only")
        # The element is subscript()'s text, ``<array>[<uint index>]``.
        index = element[len(array.text) + 1:-1]
        assert element == f"{array.text}[{index}]", element
        self.bit_views.add(array.name)
        self._helper(e, "fminmax", Elem.F32)
        name, bits = f"_atomic_{fn}_{array.text}", f"ub_{array.text}"
        # The first compare-exchange checks the plain read; a value it returns instead
        # is the element's, read atomically: where it already holds the result, the
        # operation is done without a write.
        e.helper(name, lambda: f"""\
float {name}(uint i, float v) {{
    uint old = {bits}[i];
    uint want = floatBitsToUint(_{fn}(uintBitsToFloat(old), v));
    while (true) {{
        uint seen = atomicCompSwap({bits}[i], old, want);
        if (seen == old) break;
        old = seen;
        want = floatBitsToUint(_{fn}(uintBitsToFloat(old), v));
        if (want == old) break;
    }}
    return uintBitsToFloat(old);
}}""")
        return f"{name}({index}, {value})"

    def _subgroups(self, e: CEmitter, what: str) -> None:
        if not self.f.subgroups:
            e.fail(f"{what} needs subgroup operations (basic, arithmetic, shuffle, vote and "
                   "ballot in compute shaders), which the device lacks")
        for ext in ("basic", "arithmetic", "shuffle"):
            e.need(f"GL_KHR_shader_subgroup_{ext}")

    def plane(self, e: CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
              t: Elem) -> str:
        """Subgroup operations; a broadcast by shuffle, since its lane may vary per unit
        (subgroupBroadcast needs a constant), a lane past the plane reading 0."""
        self._subgroups(e, f"plane_{fn.value}")
        if (t is Elem.F16 or t.bits == 64) and not self.f.subgroup_extended_types:
            e.fail(f"plane_{fn.value} of {t.value} needs shaderSubgroupExtendedTypes")
        if t in (Elem.I64, Elem.U64, Elem.F16):
            e.need("GL_EXT_shader_subgroup_extended_types_"
                   + ("int64" if t.is_int else "float16"))
        if fn is ir.PlaneFn.BROADCAST:
            self._helper(e, "broadcast", t)
            return f"_broadcast({value}, {lane})"
        if fn is ir.PlaneFn.SHUFFLE_XOR:
            return f"subgroupShuffleXor({value}, {lane})"
        if fn is ir.PlaneFn.SHUFFLE:
            return f"subgroupShuffle({value}, {lane})"
        if fn in (ir.PlaneFn.ALL, ir.PlaneFn.ANY):
            e.need("GL_KHR_shader_subgroup_vote")
        if fn is ir.PlaneFn.BALLOT:
            e.need("GL_KHR_shader_subgroup_ballot")
            return f"subgroupBallot({value}).x"
        return f"{_SUBGROUP_FNS[fn]}({value})"

    def shared_decl(self, e: CEmitter, sh: ir.SharedArray, name: str) -> str | None:
        """None: shared arrays are declared outside ``main`` (:meth:`head`)."""
        return None

    def head(self, e: CEmitter) -> list[str]:
        """The version, extensions, work-group size, buffers and shared arrays."""
        x, y, z = e.dim
        out = ["#version 450", *(f"#extension {n} : require" for n in sorted(e.needs)),
               f"layout(local_size_x = {x}, local_size_y = {y}, local_size_z = {z}) in;",
               "layout(std430, set = 0, binding = 0) readonly buffer Meta { uint meta_[]; };"]
        arrays, scalars = list(e.arrays), list(e.scalars)
        at = 0
        for entry in self.info.layout().entries:
            index, kind = entry.index, entry.kind
            what = (f"scalar {scalars[index]}" if kind == "scalar" else
                    f"len({arrays[index]})" if kind == "len" else "cube count x, y, z"
                    if kind == "count" else f"{arrays[index]}.{kind}[{entry.dim}]")
            out.append(f"// meta_[{at}]: {what}")
            at += entry.words
        for i, p in enumerate(e.arrays.values()):
            access = "" if p.name in e.written else "readonly "
            out.append(f"layout(std430, set = 0, binding = {i + 1}) {access}buffer B{i} "
                       f"{{ {e.mtype(p.elem)} p_{e.stems[p.name]}[]; }};  // {p.name}")
            if p.name in self.bit_views:
                out.append(f"layout(std430, set = 0, binding = {i + 1}) buffer U{i} "
                           f"{{ uint ub_p_{e.stems[p.name]}[]; }};  // {p.name} as bits")
        for sh in e.shared.values():
            out.append(f"shared {e.mtype(sh.elem)} s_{e.stems[sh.name]}[{sh.size}];"
                       f"  // {sh.name}")
        return out

    def signature(self, e: CEmitter) -> str:
        """``main``."""
        return "void main()"

    def prologue(self, e: CEmitter) -> None:
        """The cube's position from the info words' count (a dispatch maybe folded),
        and the scalars."""
        at = self.info.word("count", 0, 0, 3)
        self.grid = e.fold_grid(
            ("gl_WorkGroupID.x", "gl_WorkGroupID.y", "gl_WorkGroupID.z"),
            ("gl_NumWorkGroups.x", "gl_NumWorkGroups.y", "gl_NumWorkGroups.z"),
            (f"meta_[{at}]", f"meta_[{at + 1}]", f"meta_[{at + 2}]"))
        for i, p in enumerate(e.scalars.values()):
            w = self.info.word("scalar", i)
            e.line(f"{e.ctype(p.elem)} p_{e.stems[p.name]} = {_scalar_read(p.elem, w)};",
                   f"{p.name}: {p.elem.value}")


def _scalar_read(elem: Elem, at: int) -> str:
    w = f"meta_[{at}]"
    match elem:
        case Elem.U32:
            return w
        case Elem.I32:
            return f"int({w})"
        case Elem.F32:
            return f"uintBitsToFloat({w})"
        case Elem.BOOL:
            return f"({w} != 0u)"
        case Elem.F16:
            return f"unpackFloat2x16({w}).x"
        case Elem.F64:
            return f"packDouble2x32(uvec2({w}, meta_[{at + 1}]))"
    pair = f"packUint2x32(uvec2({w}, meta_[{at + 1}]))"
    return pair if elem is Elem.U64 else f"int64_t({pair})"
