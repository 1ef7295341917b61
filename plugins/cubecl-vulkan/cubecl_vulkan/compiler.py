"""The ``vulkan`` backend's Compiler: IR -> a GLSL 450 compute shader.

The shader's interface (what :class:`ShaderLayout` records and the server fills):

- ``set 0, binding 0``: the metadata, a read-only std430 ``uint`` array bound as a
  *dynamic* storage buffer, so one descriptor set serves every launch with the same
  arrays and only the dynamic offset changes. It holds, in the order of
  :attr:`ShaderLayout.meta`, the words of every scalar parameter (bit patterns; 64-bit
  values as two words, low first; bool as 0/1) and every length, shape and stride
  the kernel reads (``Len`` and the checked-mode bounds use the element count), and
  the launch's cube count (3 words): the builtins are computed from it, so a count
  past the device's ``maxComputeWorkGroupCount`` on one axis can be dispatched
  folded onto the others.
- ``set 0, binding 1 + i``: array parameter ``i`` as a std430 runtime array, bound
  as a descriptor *range* at the slice's offset. So arrays may start anywhere inside a
  pooled allocation that is aligned to ``minStorageBufferOffsetAlignment``; the
  shader indexes from 0. Arrays the kernel never writes are ``readonly``; none is
  ``restrict`` (two parameters may be one buffer).
- The cube dim is ``local_size_x/y/z``: part of the ArtifactId, so a constant here.

Semantics, where GLSL differs from the IR (``cubecl_server.ir``): integer ``IDIV``
and ``REM`` truncate toward zero and a division by zero gives 0 (so does
``MIN / -1``, whose quotient wraps); shifts take the amount modulo the width;
``MIN``/``MAX``/``CLAMP`` of floats return the non-NaN operand; ``erf``, ``pow`` and
``tanh`` are implemented here (GLSL's are undefined for negative bases, or lose
accuracy); float ``REM`` is C's ``fmod``, exact. f16 transcendental functions
are evaluated in f32; f64 ``exp log sin cos tanh erf pow`` (GLSL has none for
double) are written here in double precision (see ``_f64_helpers``: a few ulp).
Locals start at zero. Checked
mode reads 0 outside an array and drops stores (and atomics) outside it.

Device-dependent parts come from :class:`ShaderFeatures`: f64 needs
``shaderFloat64``, i64/u64 ``shaderInt64``, f16 ``shaderFloat16`` plus 16-bit
storage, bool arrays 8-bit storage, 64-bit atomics the Int64Atomics features, f32
atomic add ``VK_EXT_shader_atomic_float``, plane operations subgroup basic,
arithmetic and shuffle in compute (``PLANE_DIM = gl_SubgroupSize``). A kernel that
needs what the device lacks raises ``CompilationError`` saying which feature; those
refusals, and the device's limits, are all it checks: the IR has passed the core's
:func:`cubecl_server.ir_check.check_kernel` (``docs/ir.md``'s rules) before it gets
here. ``and``/``or`` are GLSL's ``&&``/``||``, which short-circuit as the IR's do.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, NoReturn

import numpy as np

from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeDim

__all__ = ["ShaderFeatures", "MetaEntry", "ArrayBinding", "ShaderLayout", "VulkanCompiler"]

_BACKEND = "vulkan"

_TYPES = {ir.Elem.F16: "float16_t", ir.Elem.F32: "float", ir.Elem.F64: "double",
          ir.Elem.I32: "int", ir.Elem.I64: "int64_t", ir.Elem.U32: "uint",
          ir.Elem.U64: "uint64_t", ir.Elem.BOOL: "bool"}
_INT_SUFFIX = {ir.Elem.I32: "", ir.Elem.U32: "u", ir.Elem.I64: "l", ir.Elem.U64: "ul"}
_ARITH = {ir.BinOp.ADD: "+", ir.BinOp.SUB: "-", ir.BinOp.MUL: "*"}
_BITWISE = {ir.BinOp.BITAND: "&", ir.BinOp.BITOR: "|", ir.BinOp.BITXOR: "^"}
_BOOL_BITWISE = {ir.BinOp.BITAND: "&&", ir.BinOp.BITOR: "||", ir.BinOp.BITXOR: "!="}
_COMPARE = {ir.BinOp.EQ: "==", ir.BinOp.NE: "!=", ir.BinOp.LT: "<", ir.BinOp.LE: "<=",
            ir.BinOp.GT: ">", ir.BinOp.GE: ">="}
# Functions GLSL has for float (f32) arguments with the IR's meaning.
_GLSL_FNS = {ir.MathFn.EXP: "exp", ir.MathFn.LOG: "log", ir.MathFn.SQRT: "sqrt",
             ir.MathFn.RSQRT: "inversesqrt", ir.MathFn.SIN: "sin", ir.MathFn.COS: "cos",
             ir.MathFn.FLOOR: "floor", ir.MathFn.CEIL: "ceil"}
# Of those, the ones GLSL also has for double.
_DOUBLE_FNS = frozenset({ir.MathFn.SQRT, ir.MathFn.RSQRT, ir.MathFn.FLOOR, ir.MathFn.CEIL})
_OWN_FNS = {ir.MathFn.TANH: "_tanh", ir.MathFn.ERF: "_erf", ir.MathFn.POW: "_pow"}
_ATOMIC_FNS = {ir.AtomicOp.ADD: "atomicAdd", ir.AtomicOp.SUB: "atomicAdd",
               ir.AtomicOp.MAX: "atomicMax", ir.AtomicOp.MIN: "atomicMin",
               ir.AtomicOp.EXCHANGE: "atomicExchange",
               ir.AtomicOp.COMPARE_EXCHANGE: "atomicCompSwap"}
_RESERVED = re.compile(r"^gl_|__")


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
class MetaEntry:
    """One item of the metadata buffer: ``kind`` is ``scalar`` (parameter ``index``
    among the scalars, ``words`` long), ``count`` (the cube count, 3 words), ``len``,
    ``shape`` or ``stride`` (of array ``index`` along ``dim``; one word)."""

    kind: str
    index: int
    dim: int = 0
    words: int = 1


@dataclass(frozen=True)
class ArrayBinding:
    """One array parameter's storage buffer: its element type and whether it is written."""

    name: str
    elem: ir.Elem
    writable: bool


@dataclass(frozen=True)
class ShaderLayout:
    """What a launch must bind and fill: the arrays (bindings 1..n), the metadata
    words (binding 0) and the work-group size compiled in."""

    arrays: tuple[ArrayBinding, ...]
    meta: tuple[MetaEntry, ...]
    local_size: tuple[int, int, int]
    entry_point: str = "main"
    meta_words: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta_words", sum(e.words for e in self.meta))

    def to_header(self) -> dict[str, Any]:
        """The layout as JSON-ready values (what the artifact header keeps)."""
        return {
            "entry_point": self.entry_point,
            "local_size": list(self.local_size),
            "arrays": [[a.name, a.elem.value, a.writable] for a in self.arrays],
            "meta": [[e.kind, e.index, e.dim, e.words] for e in self.meta],
        }

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> ShaderLayout:
        """The inverse of :meth:`to_header`; KeyError/ValueError/TypeError when malformed."""
        x, y, z = (int(v) for v in header["local_size"])
        return cls(
            arrays=tuple(ArrayBinding(str(n), ir.Elem(e), bool(w)) for n, e, w in header["arrays"]),
            meta=tuple(MetaEntry(str(k), int(i), int(d), int(w)) for k, i, d, w in header["meta"]),
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
        emitter = _Emitter(kernel, cube_dim, mode, self.features)
        source = emitter.shader()
        return CompiledKernel(name=kernel.name, entry_point="main", source=source,
                              extension=self.extension, repr=emitter.layout())


# ---------------------------------------------------------------- helper functions

_HELPERS: dict[str, str] = {
    "fminmax": """\
{T} _fmin({T} a, {T} b) {{ return isnan(a) ? b : (isnan(b) ? a : min(a, b)); }}
{T} _fmax({T} a, {T} b) {{ return isnan(a) ? b : (isnan(b) ? a : max(a, b)); }}""",
    "sdiv": """\
{T} _idiv({T} a, {T} b) {{ return b == {T}(0) ? {T}(0) : (b == {T}(-1) ? -a : a / b); }}
{T} _irem({T} a, {T} b) {{ return (b == {T}(0) || b == {T}(-1)) ? {T}(0) : a - (a / b) * b; }}""",
    "udiv": """\
{T} _idiv({T} a, {T} b) {{ return b == {T}(0) ? {T}(0) : a / b; }}
{T} _irem({T} a, {T} b) {{ return b == {T}(0) ? {T}(0) : a % b; }}""",
    "broadcast": """\
{T} _broadcast({T} v, uint lane) {{
    {T} r = subgroupShuffle(v, lane < gl_SubgroupSize ? lane : 0u);
    return lane < gl_SubgroupSize ? r : {T}(0);
}}""",
    "fdiv": """\
{T} _idiv({T} a, {T} b) {{ return trunc(a / b); }}""",
    # C's fmod, exactly: subtract the divisor scaled to the remainder's binade; each
    # subtraction is exact (Sterbenz), so the result is the true remainder.
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
# GLSL has no double-precision exp, log, sin or cos: these are written here from
# +, -, *, / and floor (exact in IEEE double), with the reductions that keep them
# within a few ulp (measured on lavapipe against the host's libm: <= 5e-16 relative,
# erf 2e-15, over the whole double range; tests/test_f64_math.py):
# - exp: x = k ln2 + r, |r| <= ln2/2, with ln2 in two parts (the first of 32 bits,
#   so k*LN2_HI is exact for every k); exp(r) by its Taylor series to r^14 (the rest
#   is below 1e-18); 2^k applied through the exponent bits, in two steps at the ends.
# - log: x = 2^e m with m in [sqrt(1/2), sqrt(2)] (subnormals scaled by 2^54 first);
#   log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172, its odd series to s^23.
# - sin, cos: below 2^20, Cody-Waite reduction by pi/2 in three parts (33, 33, 53
#   bits: the products by k < 2^20 are exact); beyond, Payne-Hanek (the mantissa
#   times the 192 bits of 2/pi at its exponent, in integer words); then Taylor series
#   on [-pi/4, pi/4] to r^19 / r^18, the quadrant choosing sin or cos and the sign.
# - tanh = expm1(2|x|) / (expm1(2|x|) + 2), with expm1 by its series below 0.5.
# - erf by the series of positive terms 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1)/(2n+1)!!
#   (no cancellation), summed to a relative 1e-17; +-1 from |x| >= 6.
# - pow = exp(y log|x|) with C's special cases (as the f32 one): relative error about
#   |y log x| ulp, 3e-13 at worst (results near the ends of the double range).
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


def _horner(var: str, coeffs: list[Fraction]) -> str:
    """``c0 + var * (c1 + var * (...))`` with double literals (exactly rounded)."""
    text = f"{float(coeffs[-1])!r}lf"
    for c in reversed(coeffs[:-1]):
        text = f"{float(c)!r}lf + {var} * ({text})"
    return text


def _f64_helpers() -> dict[str, str]:
    fact = math.factorial
    exp_poly = _horner("r", [Fraction(1, fact(n)) for n in range(15)])
    expm1_poly = _horner("x", [Fraction(1, fact(n)) for n in range(1, 19)])
    log_poly = _horner("z", [Fraction(2, 2 * n + 1) for n in range(1, 12)])
    sin_poly = _horner("z", [Fraction((-1) ** n, fact(2 * n + 1)) for n in range(1, 10)])
    cos_poly = _horner("z", [Fraction((-1) ** n, fact(2 * n)) for n in range(1, 10)])
    table = ", ".join(f"{w:#010x}u" for w in _TWO_OVER_PI)
    inf = "packDouble2x32(uvec2(0u, 0x7ff00000u))"
    nan = "packDouble2x32(uvec2(0u, 0x7ff80000u))"
    return {
        "exp_d": f"""\
double _pow2_d(int k) {{ return packDouble2x32(uvec2(0u, uint(k + 1023) << 20)); }}
double _exp_d(double x) {{
    if (isnan(x)) return x;
    if (x > 709.782712893384lf) return {inf};
    if (x < -745.1332191019412lf) return 0.0lf;
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    precise double r = (x - k * 0.6931471806019545lf) - k * -4.2009150726810846e-11lf;
    double p = {exp_poly};
    int ik = int(k);
    if (ik > 1023) return p * 2.0lf * _pow2_d(ik - 1);
    if (ik < -1022) return (p * _pow2_d(ik + 54)) * _pow2_d(-54);
    return p * _pow2_d(ik);
}}""",
        "expm1_d": f"""\
double _expm1_d(double x) {{
    if (abs(x) < 0.5lf) return x * ({expm1_poly});
    return _exp_d(x) - 1.0lf;
}}""",
        "log_d": f"""\
double _log_d(double x) {{
    if (isnan(x) || x < 0.0lf) return {nan};
    if (x == 0.0lf) return -{inf};
    if (isinf(x)) return x;
    int e = 0;
    if (x < 2.2250738585072014e-308lf) {{ x *= 18014398509481984.0lf; e = -54; }}
    uvec2 w = unpackDouble2x32(x);
    e += int(w.y >> 20) - 1023;
    double m = packDouble2x32(uvec2(w.x, (w.y & 0x000fffffu) | 0x3ff00000u));
    if (m > 1.4142135623730951lf) {{ m *= 0.5lf; e += 1; }}
    double de = double(e);
    precise double f = m - 1.0lf;
    precise double s = f / (2.0lf + f);
    double z = s * s;
    double p = {log_poly};
    precise double lo = s * z * p + de * -4.2009150726810846e-11lf;
    return de * 0.6931471806019545lf + (s * 2.0lf + lo);
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
        "sincos_d": f"""\
// sin(x) for q == 0, cos(x) for q == 1.
double _sincos_d(double x, int q) {{
    if (isnan(x) || isinf(x)) return {nan};
    precise double r;
    int quad;
    if (abs(x) < 1048576.0lf) {{
        double k = floor(x * 0.6366197723675814lf + 0.5lf);
        r = ((x - k * 1.5707963267341256lf) - k * 6.077100506303966e-11lf)
            - k * 2.0222662487959506e-21lf;
        quad = int(k - 4.0lf * floor(k * 0.25lf));
    }} else {{
        r = _reduce_big_d(x, quad);
    }}
    double z = r * r;
    quad = (quad + q) & 3;
    double v = (quad & 1) == 1 ? 1.0lf + z * ({cos_poly})
                               : r + r * z * ({sin_poly});
    return (quad & 2) == 2 ? -v : v;
}}""",
        "sin_d": "double _sin_d(double x) { return _sincos_d(x, 0); }",
        "cos_d": "double _cos_d(double x) { return _sincos_d(x, 1); }",
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
    }


_HELPERS.update(_f64_helpers())
# The f64 functions written above, and the helpers each one needs before it.
_F64_FNS = {ir.MathFn.EXP: "exp_d", ir.MathFn.LOG: "log_d", ir.MathFn.SIN: "sin_d",
            ir.MathFn.COS: "cos_d", ir.MathFn.TANH: "tanh_d", ir.MathFn.ERF: "erf_d",
            ir.MathFn.POW: "pow_d"}
_F64_DEPS = {"sin_d": ("exp_d", "reduce_big_d", "sincos_d"),
             "cos_d": ("exp_d", "reduce_big_d", "sincos_d"),
             "tanh_d": ("exp_d", "expm1_d"), "erf_d": ("exp_d",),
             "pow_d": ("exp_d", "log_d")}


def _mangle(name: str) -> str:
    """A GLSL identifier for an IR name: ASCII word characters, no ``gl_`` prefix and
    no double underscore (both reserved)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    while "__" in out:
        out = out.replace("__", "_")
    return out


def _float_text(v: float, elem: ir.Elem) -> str:
    if elem is ir.Elem.F64:
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
    return text if elem is ir.Elem.F32 else f"float16_t({text})"


def _const(value: int | float | bool, elem: ir.Elem) -> str:
    if elem is ir.Elem.BOOL:
        return "true" if value else "false"
    if elem.is_float:
        return _float_text(float(value), elem)
    bits = elem.bits
    v = int(value) & ((1 << bits) - 1)
    if elem.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    suffix = _INT_SUFFIX[elem]
    if elem.is_signed and v == -(1 << (bits - 1)):
        # The literal 2147483648 does not fit int: write the minimum as an expression.
        return f"({v + 1}{suffix} - 1{suffix})"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


class _Emitter:
    """Writes one kernel's shader: a visitor over the IR's statements and expressions."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
                 features: ShaderFeatures) -> None:
        self.k = kernel
        self.f = features
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.checked = mode is ExecutionMode.CHECKED
        self.mode = mode
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.taken: set[str] = set()
        self.extensions: set[str] = set()
        self.helpers: dict[str, str] = {}
        self.meta: list[MetaEntry] = []
        self.meta_at: dict[tuple[str, int, int], int] = {}
        self.words = 0
        self.arrays: dict[str, tuple[str, ir.Param, int]] = {}
        self.scalars: dict[str, tuple[str, ir.Param, int]] = {}
        self.locals: dict[str, tuple[str, ir.Local]] = {}
        self.shared: dict[str, tuple[str, ir.SharedArray]] = {}
        self._check_dim()
        for p in kernel.params:
            table = self.arrays if p.array else self.scalars
            table[p.name] = (self._name("a_" if p.array else "s_", p.name), p, len(table))
            self._need_type(p.elem, f"parameter {p.name!r}", storage=p.array)
        for _, p, i in self.scalars.values():
            self._meta("scalar", i, 0, 2 if p.elem.bits == 64 else 1)
        self.count_at = self._meta("count", 0, 0, 3)
        for loc in kernel.locals:
            self.locals[loc.name] = (self._name("v_", loc.name), loc)
            self._need_type(loc.elem, f"local {loc.name!r}")
        shared_bytes = 0
        for sh in kernel.shared:
            self.shared[sh.name] = (self._name("sh_", sh.name), sh)
            self._need_type(sh.elem, f"shared array {sh.name!r}", storage=True)
            shared_bytes += sh.size * max(1, sh.elem.bits // 8)
        if shared_bytes > self.f.max_shared_bytes:
            self._fail(f"shared arrays take {shared_bytes} bytes; the device allows "
                       f"{self.f.max_shared_bytes} (maxComputeSharedMemorySize)")

    # ------------------------------------------------------------ plumbing

    def _fail(self, message: str) -> NoReturn:
        raise CompilationError(message, kernel=self.k.name, backend=_BACKEND)

    def _check_dim(self) -> None:
        total = self.dim[0] * self.dim[1] * self.dim[2]
        if total > self.f.max_invocations:
            self._fail(f"cube dim {self.dim} has {total} units; the device allows "
                       f"{self.f.max_invocations} (maxComputeWorkGroupInvocations)")
        for axis, (d, m) in enumerate(zip(self.dim, self.f.max_workgroup_size, strict=False)):
            if d > m:
                self._fail(f"cube dim {self.dim}: axis {'xyz'[axis]} exceeds the device's "
                           f"maxComputeWorkGroupSize {tuple(self.f.max_workgroup_size)}")

    def _name(self, prefix: str, name: str) -> str:
        base = prefix + _mangle(name)
        if _RESERVED.search(base):
            base = "x" + base
        out, i = base, 1
        while out in self.taken:
            i += 1
            out = f"{base}_{i}"
        self.taken.add(out)
        return out

    def _temp(self, kind: str) -> str:
        self.temps += 1
        return f"t{kind}{self.temps}"

    def _line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def _meta(self, kind: str, index: int, dim: int = 0, words: int = 1) -> int:
        key = (kind, index, dim)
        if key not in self.meta_at:
            self.meta_at[key] = self.words
            self.meta.append(MetaEntry(kind, index, dim, words))
            self.words += words
        return self.meta_at[key]

    def _need_type(self, elem: ir.Elem, what: str, *, storage: bool = False) -> None:
        f = self.f
        if elem is ir.Elem.F64 and not f.float64:
            self._fail(f"{what} is f64, but the device lacks shaderFloat64")
        if elem in (ir.Elem.I64, ir.Elem.U64):
            if not f.int64:
                self._fail(f"{what} is {elem.value}, but the device lacks shaderInt64")
            self.extensions.add("GL_EXT_shader_explicit_arithmetic_types_int64")
        if elem is ir.Elem.F16:
            if not f.float16:
                self._fail(f"{what} is f16, but the device lacks shaderFloat16 with "
                           "16-bit storage")
            self.extensions.add("GL_EXT_shader_explicit_arithmetic_types_float16")
            self.extensions.add("GL_EXT_shader_16bit_storage")
        if elem is ir.Elem.BOOL and storage:
            if not f.bool_storage:
                self._fail(f"{what} holds bool, which needs storageBuffer8BitAccess")
            self.extensions.add("GL_EXT_shader_8bit_storage")
            self.extensions.add("GL_EXT_shader_explicit_arithmetic_types_int8")

    def _helper(self, key: str, template: str, elem: ir.Elem | None = None) -> None:
        name = key if elem is None else f"{key}:{elem.value}"
        if name not in self.helpers:
            self.helpers[name] = (_HELPERS[template] if elem is None
                                  else _HELPERS[template].format(T=_TYPES[elem]))

    # ------------------------------------------------------------ the shader

    def layout(self) -> ShaderLayout:
        """The interface of the shader written by :meth:`shader`."""
        written = self.k.written_arrays
        arrays = tuple(ArrayBinding(p.name, p.elem, p.name in written)
                       for _, p, _ in self.arrays.values())
        return ShaderLayout(arrays, tuple(self.meta), self.dim)

    def shader(self) -> str:
        """The whole GLSL source."""
        k = self.k
        # The launch's cube count is the metadata's: a count past the device's
        # per-axis limit is dispatched folded onto more axes, and the cubes that
        # folding adds leave at once (the whole work group: no barrier is split).
        at = self.count_at
        self._line("uint cube_ = gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y "
                   "+ gl_NumWorkGroups.y * gl_WorkGroupID.z);")
        self._line(f"uvec3 count_ = uvec3(meta_[{at}], meta_[{at + 1}], meta_[{at + 2}]);")
        self._line("if (cube_ >= count_.x * count_.y * count_.z) return;")
        self._line("uvec3 cpos_ = uvec3(cube_ % count_.x, (cube_ / count_.x) % count_.y, "
                   "cube_ / (count_.x * count_.y));")
        for py, p, i in self.scalars.values():
            at = self.meta_at[("scalar", i, 0)]
            self._line(f"{_TYPES[p.elem]} {py} = {self._scalar_read(p.elem, at)};"
                       f"  // {p.name}: {p.elem.value}")
        for py, loc in self.locals.values():
            self._line(f"{_TYPES[loc.elem]} {py} = {_const(0, loc.elem)};"
                       f"  // var {loc.name}: {loc.elem.value}")
        self._block(k.body)
        body = self.lines
        written = k.written_arrays
        head = [
            "#version 450",
            f"// kernel {k.name!r} lowered by cubecl-server's vulkan backend "
            f"({self.mode.value}, cube dim {self.dim})",
            *(f"#extension {e} : require" for e in sorted(self.extensions)),
            f"layout(local_size_x = {self.dim[0]}, local_size_y = {self.dim[1]}, "
            f"local_size_z = {self.dim[2]}) in;",
            "layout(std430, set = 0, binding = 0) readonly buffer Meta { uint meta_[]; };",
            *self._meta_comments(),
        ]
        for py, p, i in self.arrays.values():
            access = "" if p.name in written else "readonly "
            head.append(f"layout(std430, set = 0, binding = {i + 1}) {access}buffer B{i} "
                        f"{{ {self._storage_type(p.elem)} {py}[]; }};  // {p.name}")
        for py, sh in self.shared.values():
            head.append(f"shared {self._storage_type(sh.elem)} {py}[{max(1, sh.size)}];"
                        f"  // {sh.name}")
        return "\n".join([*head, *self.helpers.values(), "void main() {", *body, "}"]) + "\n"

    def _meta_comments(self) -> list[str]:
        arrays = [p.name for _, p, _ in self.arrays.values()]
        scalars = [p.name for _, p, _ in self.scalars.values()]
        out = []
        for (kind, index, dim), at in self.meta_at.items():
            what = (f"scalar {scalars[index]}" if kind == "scalar" else f"len({arrays[index]})"
                    if kind == "len" else "cube count x, y, z" if kind == "count"
                    else f"{arrays[index]}.{kind}[{dim}]")
            out.append(f"// meta_[{at}]: {what}")
        return out

    def _storage_type(self, elem: ir.Elem) -> str:
        return "uint8_t" if elem is ir.Elem.BOOL else _TYPES[elem]

    def _scalar_read(self, elem: ir.Elem, at: int) -> str:
        w = f"meta_[{at}]"
        match elem:
            case ir.Elem.U32:
                return w
            case ir.Elem.I32:
                return f"int({w})"
            case ir.Elem.F32:
                return f"uintBitsToFloat({w})"
            case ir.Elem.BOOL:
                return f"({w} != 0u)"
            case ir.Elem.F16:
                return f"unpackFloat2x16({w}).x"
            case ir.Elem.F64:
                return f"packDouble2x32(uvec2({w}, meta_[{at + 1}]))"
        pair = f"packUint2x32(uvec2({w}, meta_[{at + 1}]))"
        return pair if elem is ir.Elem.U64 else f"int64_t({pair})"

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
                self._line(f"{self.locals[name][0]} = {self._expr(value)};")
            case ir.Store():
                self._store(s)
            case ir.If(cond=c, then=then, orelse=orelse):
                self._line(f"if ({self._expr(c)}) {{")
                self._nested(then)
                if orelse:
                    self._line("} else {")
                    self._nested(orelse)
                self._line("}")
            case ir.For():
                self._for(s)
            case ir.While(cond=c, body=body):
                self._line(f"while ({self._expr(c)}) {{")
                self._nested(body)
                self._line("}")
            case ir.Break():
                self._line("break;")
            case ir.Continue():
                self._line("continue;")
            case ir.Return():
                self._line("return;")
            case ir.Barrier():
                # Orders shared and buffer memory within the work group, then waits.
                self._line("groupMemoryBarrier();")
                self._line("barrier();")
            case ir.AtomicStmt():
                self._atomic(s)

    def _for(self, s: ir.For) -> None:
        py, loc = self.locals[s.var]
        step = int(s.step.value)
        t = _TYPES[loc.elem]
        k, stop = self._temp("k"), self._temp("e")
        # Python's range: bounds evaluated once; a counter of our own, so assigning
        # the variable in the body does not change the trip count.
        self._line("{")
        self.depth += 1
        self._line(f"{t} {k} = {self._expr(s.start)};")
        self._line(f"{t} {stop} = {self._expr(s.stop)};")
        if s.unroll:
            self.extensions.add("GL_EXT_control_flow_attributes")
        attr = "[[unroll]] " if s.unroll else ""
        if step > 0:
            cond, inc = f"{k} < {stop}", f"{k} += {_const(step, loc.elem)}"
        elif loc.elem.is_signed:
            cond, inc = f"{k} > {stop}", f"{k} += {_const(step, loc.elem)}"
        else:
            cond, inc = f"{k} > {stop}", f"{k} -= {_const(-step, loc.elem)}"
        self._line(f"{attr}for (; {cond}; {inc}) {{")
        self.depth += 1
        self._line(f"{py} = {k};")
        self.depth -= 1
        self._nested(s.body)
        self._line("}")
        self.depth -= 1
        self._line("}")

    def _store(self, s: ir.Store) -> None:
        if s.array in self.shared:
            py, sh = self.shared[s.array]
            elem, length = sh.elem, str(sh.size)
        else:
            py, p, i = self.arrays[s.array]
            elem, length = p.elem, self._len(i)
        value = self._expr(s.value)
        if elem is ir.Elem.BOOL:
            value = f"uint8_t({value} ? 1u : 0u)"
        if not self.checked:
            self._line(f"{py}[{self._index(s.index)}] = {value};")
            return
        idx = self._temp("i")
        self._line("{")
        self.depth += 1
        self._line(f"{_TYPES[s.index.type]} {idx} = {self._expr(s.index)};")
        self._line(f"if ({self._in_range(idx, s.index.type, length)}) "
                   f"{py}[{self._as_index(idx, s.index.type)}] = {value};")
        self.depth -= 1
        self._line("}")

    def _atomic(self, s: ir.AtomicStmt) -> None:
        if s.array in self.shared:
            py, sh = self.shared[s.array]
            elem, length = sh.elem, str(sh.size)
        else:
            py, p, i = self.arrays[s.array]
            elem, length = p.elem, self._len(i)
        self._atomic_type(elem, s.op)
        t = _TYPES[elem]
        idx, val, old = self._temp("i"), self._temp("v"), self._temp("o")
        self._line("{")
        self.depth += 1
        self._line(f"{_TYPES[s.index.type]} {idx} = {self._expr(s.index)};")
        value = self._expr(s.value)
        if s.op is ir.AtomicOp.SUB:
            value = f"{_const(0, elem)} - ({value})"
        self._line(f"{t} {val} = {value};")
        args = f"{py}[{self._as_index(idx, s.index.type)}], "
        if s.compare is not None:
            args += f"{self._expr(s.compare)}, "
        call = f"{_ATOMIC_FNS[s.op]}({args}{val})"
        self._line(f"{t} {old} = {_const(0, elem)};")
        guard = f"if ({self._in_range(idx, s.index.type, length)}) " if self.checked else ""
        self._line(f"{guard}{old} = {call};")
        if s.result is not None:
            self._line(f"{self.locals[s.result][0]} = {old};")
        self.depth -= 1
        self._line("}")

    def _atomic_type(self, elem: ir.Elem, op: ir.AtomicOp) -> None:
        """Require what an atomic on ``elem`` needs beyond Vulkan's minimum."""
        if elem in (ir.Elem.I64, ir.Elem.U64):
            if not self.f.int64_atomics:
                self._fail(f"atomic {op.value} on {elem.value} needs the device's "
                           "shaderBufferInt64Atomics/shaderSharedInt64Atomics")
            self.extensions.add("GL_EXT_shader_atomic_int64")
        elif elem is ir.Elem.F32:  # add, the one atomic on floats
            if not self.f.float32_atomic_add:
                self._fail(f"atomic {op.value} on f32 needs VK_EXT_shader_atomic_float")
            self.extensions.add("GL_EXT_shader_atomic_float")

    # ------------------------------------------------------------ memory

    def _len(self, array_index: int) -> str:
        return f"meta_[{self._meta('len', array_index)}]"

    def _in_range(self, idx: str, t: ir.Elem, length: str) -> str:
        if t is ir.Elem.U32:
            return f"{idx} < {length}"
        if t is ir.Elem.I32:
            return f"{idx} >= 0 && uint({idx}) < {length}"
        wide = f"uint64_t({length})"
        if t is ir.Elem.U64:
            return f"{idx} < {wide}"
        return f"{idx} >= 0l && uint64_t({idx}) < {wide}"

    def _as_index(self, idx: str, t: ir.Elem) -> str:
        return idx if t in (ir.Elem.I32, ir.Elem.U32) else f"uint({idx})"

    def _index(self, e: ir.Expr) -> str:
        return self._as_index(self._expr(e), e.type)

    def _load(self, e: ir.Load) -> str:
        if e.array in self.shared:
            py, sh = self.shared[e.array]
            elem, length, tag = sh.elem, str(sh.size), py
        else:
            py, p, i = self.arrays[e.array]
            elem, length, tag = p.elem, self._len(i), py
        if not self.checked:
            return self._from_storage(f"{py}[{self._index(e.index)}]", elem)
        it = e.index.type
        # One function per array and index type: evaluates the index once.
        fn = f"ld_{tag}_{it.value}"
        if fn not in self.helpers:
            read = self._from_storage(f"{py}[{self._as_index('i', it)}]", elem)
            self.helpers[fn] = (f"{_TYPES[elem]} {fn}({_TYPES[it]} i) {{ return "
                                f"({self._in_range('i', it, length)}) ? {read} : "
                                f"{_const(0, elem)}; }}")
        return f"{fn}({self._expr(e.index)})"

    def _from_storage(self, access: str, elem: ir.Elem) -> str:
        return f"(uint({access}) != 0u)" if elem is ir.Elem.BOOL else access

    # ------------------------------------------------------------ expressions

    def _expr(self, e: ir.Expr) -> str:
        match e:
            case ir.Const(value=v, type=t):
                return _const(v, t)
            case ir.Var(name=n):
                if n in self.locals:
                    return self.locals[n][0]
                return self.scalars[n][0]
            case ir.Builtin(name=n):
                return self._builtin(n)
            case ir.Binary():
                return self._binary(e)
            case ir.Unary():
                return self._unary(e)
            case ir.Math():
                return self._math(e)
            case ir.Cast(x=x, type=t):
                return self._cast(self._expr(x), x.type, t)
            case ir.Select(cond=c, a=a, b=b):
                return f"({self._expr(c)} ? {self._expr(a)} : {self._expr(b)})"
            case ir.Load():
                return self._load(e)
            case ir.Len(array=a):
                return self._len(self.arrays[a][2])
            case ir.Shape(array=a, dim=d):
                return f"meta_[{self._meta('shape', self.arrays[a][2], d)}]"
            case ir.Stride(array=a, dim=d):
                return f"meta_[{self._meta('stride', self.arrays[a][2], d)}]"
            case ir.PlaneOp():
                return self._plane(e)

    def _builtin(self, n: ir.BuiltinName) -> str:
        B = ir.BuiltinName
        dx, dy, dz = self.dim
        cube_dim = f"{dx * dy * dz}u"
        table = {
            B.UNIT_POS: "gl_LocalInvocationIndex",
            B.UNIT_POS_X: "gl_LocalInvocationID.x", B.UNIT_POS_Y: "gl_LocalInvocationID.y",
            B.UNIT_POS_Z: "gl_LocalInvocationID.z",
            B.CUBE_POS: "cube_",
            B.CUBE_POS_X: "cpos_.x", B.CUBE_POS_Y: "cpos_.y", B.CUBE_POS_Z: "cpos_.z",
            B.CUBE_DIM: cube_dim,
            B.CUBE_DIM_X: f"{dx}u", B.CUBE_DIM_Y: f"{dy}u", B.CUBE_DIM_Z: f"{dz}u",
            B.CUBE_COUNT: "(count_.x * count_.y * count_.z)",
            B.CUBE_COUNT_X: "count_.x", B.CUBE_COUNT_Y: "count_.y", B.CUBE_COUNT_Z: "count_.z",
            B.ABSOLUTE_POS: f"(cube_ * {cube_dim} + gl_LocalInvocationIndex)",
            B.ABSOLUTE_POS_X: f"(cpos_.x * {dx}u + gl_LocalInvocationID.x)",
            B.ABSOLUTE_POS_Y: f"(cpos_.y * {dy}u + gl_LocalInvocationID.y)",
            B.ABSOLUTE_POS_Z: f"(cpos_.z * {dz}u + gl_LocalInvocationID.z)",
        }
        if n in (B.PLANE_DIM, B.UNIT_POS_PLANE):
            self._need_subgroups("PLANE_DIM" if n is B.PLANE_DIM else "UNIT_POS_PLANE")
            return "gl_SubgroupSize" if n is B.PLANE_DIM else "gl_SubgroupInvocationID"
        return table[n]

    def _binary(self, e: ir.Binary) -> str:
        op, t = e.op, e.lhs.type
        a, b = self._expr(e.lhs), self._expr(e.rhs)
        if op in _COMPARE:
            return f"({a} {_COMPARE[op]} {b})"
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            # GLSL's && and || short-circuit, as the IR's AND and OR do.
            return f"({a} {'&&' if op is ir.BinOp.AND else '||'} {b})"
        if op in _BITWISE:
            sym = _BOOL_BITWISE[op] if t is ir.Elem.BOOL else _BITWISE[op]
            return f"({a} {sym} {b})"
        if op in _ARITH:
            return f"({a} {_ARITH[op]} {b})"
        if op is ir.BinOp.DIV:
            return f"({a} / {b})"
        if op is ir.BinOp.REM and t.is_float:
            wide = ir.Elem.F32 if t is ir.Elem.F16 else t  # f16's remainder is exact in f32
            self._helper("fmod", "fmod", wide)
            if t is ir.Elem.F16:
                return f"float16_t(_fmod(float({a}), float({b})))"
            return f"_fmod({a}, {b})"
        if op in (ir.BinOp.IDIV, ir.BinOp.REM):
            kind = "fdiv" if t.is_float else "sdiv" if t.is_signed else "udiv"
            self._helper(kind, kind, t)
            return f"{'_idiv' if op is ir.BinOp.IDIV else '_irem'}({a}, {b})"
        # SHL or SHR, the operators left.
        sym = "<<" if op is ir.BinOp.SHL else ">>"
        return f"({a} {sym} ({b} & {_const(t.bits - 1, t)}))"

    def _unary(self, e: ir.Unary) -> str:
        t, x = e.x.type, self._expr(e.x)
        if e.op is ir.UnOp.NEG:
            return f"(-{x})"
        # NOT, or BITNOT: ! on bools, ~ on integers.
        return f"(!{x})" if t is ir.Elem.BOOL else f"(~{x})"

    def _cast(self, x: str, src: ir.Elem, dst: ir.Elem) -> str:
        if src is dst:
            return x
        if dst is ir.Elem.BOOL:
            return f"({x} != {_const(0, src)})"
        if src is ir.Elem.F16 or dst is ir.Elem.F16:
            # Conversions to and from f16 go through f32 where GLSL has no direct one.
            if src is ir.Elem.BOOL or (src.is_int and src.bits == 64):
                x = f"float({x})"
            elif dst.is_int and dst.bits == 64:
                return f"{_TYPES[dst]}(float({x}))"
        return f"{_TYPES[dst]}({x})"

    def _math(self, e: ir.Math) -> str:
        fn, t = e.fn, e.args[0].type
        xs = [self._expr(a) for a in e.args]
        if fn is ir.MathFn.ISNAN or fn is ir.MathFn.ISINF:
            if not t.is_float:
                return "false"
            return f"{fn.value}({xs[0]})"
        if fn is ir.MathFn.ABS:
            return xs[0] if t in (ir.Elem.U32, ir.Elem.U64) else f"abs({xs[0]})"
        if fn in (ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.CLAMP):
            if not t.is_float:
                lo = f"max({xs[0]}, {xs[1]})" if fn is ir.MathFn.CLAMP else None
                if lo is not None:
                    return f"min({lo}, {xs[2]})"
                return f"{fn.value}({xs[0]}, {xs[1]})"
            self._helper("fminmax", "fminmax", t)
            if fn is ir.MathFn.CLAMP:
                return f"_fmin(_fmax({xs[0]}, {xs[1]}), {xs[2]})"
            return f"_f{fn.value}({xs[0]}, {xs[1]})"
        if fn is ir.MathFn.FMA:
            return f"fma({xs[0]}, {xs[1]}, {xs[2]})"
        if t is ir.Elem.F64 and fn in _DOUBLE_FNS:
            return f"{_GLSL_FNS[fn]}({xs[0]})"
        if t is ir.Elem.F64 and fn in _F64_FNS:
            helper = _F64_FNS[fn]
            for dep in (*_F64_DEPS.get(helper, ()), helper):
                self._helper(dep, dep)
            return f"_{helper}({', '.join(xs)})"
        # f16 goes through f32 (then rounds to f16).
        if t is not ir.Elem.F32:
            xs = [f"float({x})" for x in xs]
        if fn in _GLSL_FNS:
            call = f"{_GLSL_FNS[fn]}({xs[0]})"
        else:
            self._helper(fn.value, fn.value)
            call = f"{_OWN_FNS[fn]}({', '.join(xs)})"
        return call if t is ir.Elem.F32 else f"{_TYPES[t]}({call})"

    def _need_subgroups(self, what: str) -> None:
        if not self.f.subgroups:
            self._fail(f"{what} needs subgroup operations (basic, arithmetic and shuffle "
                       "in compute shaders), which the device lacks")
        for ext in ("basic", "arithmetic", "shuffle"):
            self.extensions.add(f"GL_KHR_shader_subgroup_{ext}")

    def _plane(self, e: ir.PlaneOp) -> str:
        self._need_subgroups(f"plane_{e.fn.value}")
        t = e.type
        if (t is ir.Elem.F16 or t.bits == 64) and not self.f.subgroup_extended_types:
            self._fail(f"plane_{e.fn.value} of {t.value} needs shaderSubgroupExtendedTypes")
        if t in (ir.Elem.I64, ir.Elem.U64, ir.Elem.F16):
            self.extensions.add("GL_EXT_shader_subgroup_extended_types_"
                                + ("int64" if t.is_int else "float16"))
        v = self._expr(e.value)
        if e.lane is not None:  # BROADCAST, the one plane function with a lane
            # The lane may vary per unit: a shuffle, not subgroupBroadcast (which needs
            # a constant). A lane past the plane reads 0, as on the cpu backend.
            self._helper("broadcast", "broadcast", t)
            lane = self._cast(self._expr(e.lane), e.lane.type, ir.Elem.U32)
            return f"_broadcast({v}, {lane})"
        if e.fn is ir.PlaneFn.SUM:
            return f"subgroupAdd({v})"
        return f"subgroupMax({v})"
