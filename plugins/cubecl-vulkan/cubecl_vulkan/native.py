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

The float functions: only the GLSL.std.450 ones measured within the budget of
``docs/ir.md`` at every input on lavapipe - ``sqrt``, ``inverseSqrt``, ``floor``,
``ceil``, ``roundEven``, ``trunc`` (exact or correctly rounded); the others
(``Exp`` ~60 ulp, ``Log`` poor near 1, ``Sin``/``Cos`` without range reduction,
subnormal results flushed) and every f64 transcendental one (GLSL.std.450 has none)
are the core's polyfills, float ``%`` among them (``float_rem`` False: ``OpFRem`` is
not C's ``fmod`` on lavapipe). ``FMin``/``FMax`` happen to follow C's NaN rule on
lavapipe, but the specification leaves a NaN operand undefined.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from cubecl_server import ir
from cubecl_server.backend.lowering import Native
from cubecl_vulkan.spirv import GLSL

__all__ = ["ShaderFeatures", "GLSL_MATH", "INT32_FUNCTIONS", "native_for"]

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


GLSL_MATH = {M.SQRT: GLSL.Sqrt, M.RSQRT: GLSL.InverseSqrt, M.FLOOR: GLSL.Floor,
             M.CEIL: GLSL.Ceil, M.ROUND: GLSL.RoundEven, M.TRUNC: GLSL.Trunc}
"""The float functions GLSL.std.450 computes with the IR's meaning and within its
budget, for f32 and f64 (f16 through f32)."""
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
    floats = frozenset(GLSL_MATH)
    atomics = ({ir.AtomicOp.ADD} if f.float32_atomic_add else set()) | (
        {ir.AtomicOp.MIN, ir.AtomicOp.MAX} if f.float32_atomic_min_max else set())
    return Native(
        short_circuit=False, nan_minmax=False,
        float_rem=False,  # OpFRem is not C's fmod: see the module
        functions={Elem.F16: floats, Elem.F32: floats, Elem.F64: floats,
                   Elem.I32: INT32_FUNCTIONS, Elem.U32: INT32_FUNCTIONS},
        float_atomics=frozenset(atomics), builtins=_BUILTINS,
        zeroed_shared=False, zeroed_local_arrays=True)
