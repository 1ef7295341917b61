"""What a Vulkan device has and computes itself: its :class:`ShaderFeatures` (what a
shader may use, which the device module probes), and the
:class:`~cubecl_server.backend.lowering.Native` the core's passes read, per device.

SPIR-V has no short circuit (``OpLogicalAnd`` evaluates both sides), GLSL.std.450's
``FMin``/``FMax`` are undefined on a NaN operand and there is no float atomic but
those of ``VK_EXT_shader_atomic_float`` (add) and ``..._float2`` (min and max). The
integer functions are SPIR-V's on 32 bits only (Vulkan allows ``OpBitCount``,
``OpBitReverse``, ``FindILsb`` and ``FindUMsb`` on 32-bit operands alone; the extended
multiplies give ``MUL_HI``); no saturating arithmetic. A unit reads its position
(``LocalInvocationId``, ``LocalInvocationIndex``) and its subgroup's size and its
place in it; the cube's position and the count (linear and per axis) come from the
dispatch, which may be folded (:mod:`cubecl_vulkan.interface`). Function-storage
arrays start at zero (an ``OpConstantNull`` initializer); shared memory does not.

The float functions: GLSL.std.450's (:data:`GLSL_MATH`), and for now also those this
plugin's own :mod:`cubecl_vulkan.mathlib` computes (f16 as f32), float ``%`` among
them: ``OpFRem`` is not C's ``fmod`` on lavapipe (inexact where the quotient is large,
``-0.0 % y`` is ``+0.0``). Once the core's math library has them as IR, only the
GLSL.std.450 functions measured within the budget at every input on lavapipe stay
native - ``sqrt``, ``inverseSqrt``, ``floor``, ``ceil``, ``roundEven``, ``trunc`` - and
``float_rem`` is False. ``FMin``/``FMax`` happen to follow C's NaN rule on lavapipe, but
the specification leaves a NaN operand undefined.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cubecl_server import ir
from cubecl_server.backend.lowering import Native
from cubecl_vulkan.spirv import GLSL

__all__ = ["ShaderFeatures", "GLSL_MATH", "GLSL_F64", "MATHLIB_F32", "MATHLIB_F64",
           "INT32_FUNCTIONS", "native_for"]

M = ir.MathFn
B = ir.BuiltinName
Elem = ir.Elem


@dataclass(frozen=True)
class ShaderFeatures:
    """What the device lets a shader use; the defaults are Vulkan's guaranteed minimum.

    ``float32_atomic_add`` is ``VK_EXT_shader_atomic_float``'s add on buffers and
    shared memory, ``float32_atomic_min_max`` ``VK_EXT_shader_atomic_float2``'s min and
    max on both."""

    float64: bool = False
    int64: bool = False
    float16: bool = False
    int16: bool = False
    bool_storage: bool = False
    int64_atomics: bool = False
    float32_atomic_add: bool = False
    float32_atomic_min_max: bool = False
    subgroups: bool = False
    subgroup_extended_types: bool = False
    subgroup_size: int = 0
    max_shared_bytes: int = 16384
    max_invocations: int = 128
    max_workgroup_size: tuple[int, ...] = (128, 128, 64)

    def describe(self) -> str:
        """A canonical text of every field (part of what the source key hashes)."""
        return repr(sorted(asdict(self).items()))


GLSL_MATH = {M.EXP: GLSL.Exp, M.LOG: GLSL.Log, M.SQRT: GLSL.Sqrt, M.RSQRT: GLSL.InverseSqrt,
             M.SIN: GLSL.Sin, M.COS: GLSL.Cos, M.TAN: GLSL.Tan, M.EXP2: GLSL.Exp2,
             M.FLOOR: GLSL.Floor, M.CEIL: GLSL.Ceil, M.ROUND: GLSL.RoundEven,
             M.TRUNC: GLSL.Trunc}
"""The f32 functions GLSL.std.450 computes with the IR's meaning (f16 through f32)."""
GLSL_F64 = frozenset({M.SQRT, M.RSQRT, M.FLOOR, M.CEIL, M.ROUND, M.TRUNC})
"""Of those, the ones GLSL.std.450 has for f64 (it has no f64 transcendental)."""
MATHLIB_F32 = frozenset({M.TANH, M.ERF, M.POW, M.ASIN, M.ACOS, M.ATAN, M.ATAN2, M.SINH,
                         M.COSH, M.LOG2, M.LOG1P, M.EXPM1, M.HYPOT})
"""The f32 functions :mod:`cubecl_vulkan.mathlib` computes (until the core's do)."""
MATHLIB_F64 = MATHLIB_F32 | {M.EXP, M.EXP2, M.LOG, M.SIN, M.COS, M.TAN}
"""The f64 functions :mod:`cubecl_vulkan.mathlib` computes (until the core's do)."""
INT32_FUNCTIONS = frozenset({M.COUNT_ONES, M.REVERSE_BITS, M.LEADING_ZEROS, M.TRAILING_ZEROS,
                             M.FIND_FIRST_SET, M.MUL_HI})
"""The integer functions SPIR-V has, on 32-bit integers only."""

_BUILTINS = frozenset({B.UNIT_POS_X, B.UNIT_POS_Y, B.UNIT_POS_Z, B.UNIT_POS,
                       B.CUBE_POS_X, B.CUBE_POS_Y, B.CUBE_POS_Z, B.CUBE_POS,
                       B.CUBE_COUNT_X, B.CUBE_COUNT_Y, B.CUBE_COUNT_Z, B.CUBE_COUNT,
                       B.PLANE_DIM, B.UNIT_POS_PLANE})
# The plane builtins are native even without subgroups: the emitter refuses them
# there, naming the feature, where a derivation would fail for want of PLANE_DIM.


def native_for(f: ShaderFeatures) -> Native:
    """What a device with features ``f`` computes itself (see the module)."""
    f32 = frozenset(GLSL_MATH) | MATHLIB_F32
    atomics = ({ir.AtomicOp.ADD} if f.float32_atomic_add else set()) | (
        {ir.AtomicOp.MIN, ir.AtomicOp.MAX} if f.float32_atomic_min_max else set())
    return Native(
        short_circuit=False, nan_minmax=False,
        float_rem=True,  # mathlib's fmod, exact (OpFRem is not: see the module)
        functions={Elem.F16: f32, Elem.F32: f32, Elem.F64: GLSL_F64 | MATHLIB_F64,
                   Elem.I32: INT32_FUNCTIONS, Elem.U32: INT32_FUNCTIONS},
        float_atomics=frozenset(atomics), builtins=_BUILTINS,
        zeroed_shared=False, zeroed_local_arrays=True)
