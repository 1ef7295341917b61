"""The CUDA C++ prelude every generated kernel starts with: the IR's semantics as helpers.

Plain C++ differs from the IR (``cubecl_server/ir.py``) in a few places; each helper
here is where the generated code gets the IR's meaning instead:

- signed ``+ - *``, negation and ``<<`` wrap (computed in the unsigned type, since
  signed overflow is undefined in C++17); ``//`` and ``%`` truncate like C, but a
  division by zero gives 0 and ``INT_MIN / -1`` wraps instead of trapping;
- ``min``/``max``/``clamp`` on floats are ``fmin``/``fmax`` (a NaN operand loses);
- ``f16`` math goes through ``f32`` and rounds once to ``f16``, which is what NumPy
  does for ``float16`` (``+ - * /`` of ``__half`` are the correctly rounded ones of
  ``cuda_fp16.h``);
- checked loads read 0 outside ``[0, n)``; the index is compared as ``u64`` so a
  negative signed index is outside;
- atomics exist for every numeric type: native where CUDA has the instruction,
  otherwise a compare-and-swap loop on the value's bits (``f16`` needs ``sm_70``);
- plane (warp, 32 units) operations act on the units active at the call
  (``__activemask``): a butterfly of ``__shfl_xor_sync`` when the whole warp is
  there, a walk over the active lanes with ``__shfl_sync`` otherwise, so a short
  last warp of a cube and divergent code both see only their active units.
"""

from __future__ import annotations

__all__ = ["PRELUDE", "PLANE_SIZE"]

PLANE_SIZE = 32
"""Units per plane: the CUDA warp size."""

PRELUDE = r"""
#include <cuda_fp16.h>

// ---------------------------------------------------------------- values
template <typename T> __device__ __forceinline__ T cc_zero() { return T(0); }
template <> __device__ __forceinline__ __half cc_zero<__half>() {
  return __ushort_as_half((unsigned short)0u);
}
template <typename T> __device__ __forceinline__ T cc_select(bool c, T a, T b) {
  return c ? a : b;
}
template <typename I> __device__ __forceinline__ bool cc_in(I i, unsigned int n) {
  return (unsigned long long)i < (unsigned long long)n;
}
template <typename T, typename I>
__device__ __forceinline__ T cc_load(const T* p, I i, unsigned int n) {
  return cc_in(i, n) ? p[i] : cc_zero<T>();
}

// ---------------------------------------------------------------- wrapping integers
template <typename T> __device__ __forceinline__ T cc_add(T a, T b) { return a + b; }
#define CC_SIGNED(S, U, BITS)                                                          \
  __device__ __forceinline__ S cc_add(S a, S b) { return (S)((U)a + (U)b); }          \
  __device__ __forceinline__ S cc_sub(S a, S b) { return (S)((U)a - (U)b); }          \
  __device__ __forceinline__ S cc_mul(S a, S b) { return (S)((U)a * (U)b); }          \
  __device__ __forceinline__ S cc_neg(S a) { return (S)((U)0 - (U)a); }               \
  __device__ __forceinline__ S cc_abs(S a) { return a < 0 ? cc_neg(a) : a; }          \
  __device__ __forceinline__ S cc_idiv(S a, S b) {                                     \
    return b == 0 ? (S)0 : b == -1 ? cc_neg(a) : a / b;                               \
  }                                                                                    \
  __device__ __forceinline__ S cc_rem(S a, S b) {                                      \
    return (b == 0 || b == -1) ? (S)0 : a % b;                                         \
  }                                                                                    \
  __device__ __forceinline__ S cc_shl(S a, S b) {                                      \
    return (S)((U)a << ((U)b & (U)(BITS - 1)));                                        \
  }                                                                                    \
  __device__ __forceinline__ S cc_shr(S a, S b) { return a >> ((U)b & (U)(BITS - 1)); }
#define CC_UNSIGNED(U, BITS)                                                           \
  __device__ __forceinline__ U cc_abs(U a) { return a; }                              \
  __device__ __forceinline__ U cc_idiv(U a, U b) { return b == 0 ? (U)0 : a / b; }    \
  __device__ __forceinline__ U cc_rem(U a, U b) { return b == 0 ? (U)0 : a % b; }     \
  __device__ __forceinline__ U cc_shl(U a, U b) { return a << (b & (U)(BITS - 1)); }  \
  __device__ __forceinline__ U cc_shr(U a, U b) { return a >> (b & (U)(BITS - 1)); }
CC_SIGNED(int, unsigned int, 32)
CC_SIGNED(long long, unsigned long long, 64)
CC_UNSIGNED(unsigned int, 32)
CC_UNSIGNED(unsigned long long, 64)

template <typename T> __device__ __forceinline__ T cc_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T cc_max(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ bool cc_isnan(T) { return false; }
template <typename T> __device__ __forceinline__ bool cc_isinf(T) { return false; }

// ---------------------------------------------------------------- floats
#define CC_H2F(x) __half2float(x)
#define CC_F2H(x) __float2half_rn(x)
#define CC_UNARY(NAME, F32, F64)                                                       \
  __device__ __forceinline__ float NAME(float x) { return F32(x); }                   \
  __device__ __forceinline__ double NAME(double x) { return F64(x); }                 \
  __device__ __forceinline__ __half NAME(__half x) { return CC_F2H(F32(CC_H2F(x))); }
#define CC_BINARY(NAME, F32, F64)                                                      \
  __device__ __forceinline__ float NAME(float a, float b) { return F32(a, b); }       \
  __device__ __forceinline__ double NAME(double a, double b) { return F64(a, b); }    \
  __device__ __forceinline__ __half NAME(__half a, __half b) {                         \
    return CC_F2H(F32(CC_H2F(a), CC_H2F(b)));                                          \
  }
CC_UNARY(cc_exp, expf, exp)
CC_UNARY(cc_log, logf, log)
CC_UNARY(cc_sqrt, sqrtf, sqrt)
CC_UNARY(cc_rsqrt, rsqrtf, rsqrt)
CC_UNARY(cc_sin, sinf, sin)
CC_UNARY(cc_cos, cosf, cos)
CC_UNARY(cc_tanh, tanhf, tanh)
CC_UNARY(cc_erf, erff, erf)
CC_UNARY(cc_floor, floorf, floor)
CC_UNARY(cc_ceil, ceilf, ceil)
CC_UNARY(cc_abs, fabsf, fabs)
CC_BINARY(cc_pow, powf, pow)
CC_BINARY(cc_min, fminf, fmin)
CC_BINARY(cc_max, fmaxf, fmax)
CC_BINARY(cc_rem, fmodf, fmod)
__device__ __forceinline__ float cc_idiv(float a, float b) { return truncf(a / b); }
__device__ __forceinline__ double cc_idiv(double a, double b) { return trunc(a / b); }
// The quotient is rounded to f16 first, as NumPy's trunc(a / b) on float16 does.
__device__ __forceinline__ __half cc_idiv(__half a, __half b) {
  return CC_F2H(truncf(CC_H2F(a / b)));
}
__device__ __forceinline__ float cc_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double cc_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ __half cc_fma(__half a, __half b, __half c) {
  return CC_F2H(fmaf(CC_H2F(a), CC_H2F(b), CC_H2F(c)));
}
__device__ __forceinline__ bool cc_isnan(float x) { return isnan(x); }
__device__ __forceinline__ bool cc_isnan(double x) { return isnan(x); }
__device__ __forceinline__ bool cc_isnan(__half x) { return isnan(CC_H2F(x)); }
__device__ __forceinline__ bool cc_isinf(float x) { return isinf(x); }
__device__ __forceinline__ bool cc_isinf(double x) { return isinf(x); }
__device__ __forceinline__ bool cc_isinf(__half x) { return isinf(CC_H2F(x)); }

// ---------------------------------------------------------------- atomics
__device__ __forceinline__ unsigned int cc_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long cc_bits(double v) {
  return (unsigned long long)__double_as_longlong(v);
}
__device__ __forceinline__ unsigned short cc_bits(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ float cc_unbits(unsigned int b, float*) { return __uint_as_float(b); }
__device__ __forceinline__ double cc_unbits(unsigned long long b, double*) {
  return __longlong_as_double((long long)b);
}
__device__ __forceinline__ __half cc_unbits(unsigned short b, __half*) {
  return __ushort_as_half(b);
}
// Replace *p by f(*p) atomically; returns the old value.
template <typename T, typename F> __device__ T cc_atomic_update(T* p, F f) {
  typedef decltype(cc_bits(*p)) B;
  B* a = reinterpret_cast<B*>(p);
  B old = *a;
  while (true) {
    const T cur = cc_unbits(old, (T*)0);
    const B seen = atomicCAS(a, old, cc_bits(f(cur)));
    if (seen == old) return cur;
    old = seen;
  }
}
// Store v where *p equals cmp as a value (so -0 matches +0 and NaN matches nothing).
template <typename T> __device__ T cc_atomic_cas_float(T* p, T cmp, T v) {
  typedef decltype(cc_bits(*p)) B;
  B* a = reinterpret_cast<B*>(p);
  B old = *a;
  while (true) {
    const T cur = cc_unbits(old, (T*)0);
    if (!(cur == cmp)) return cur;
    const B seen = atomicCAS(a, old, cc_bits(v));
    if (seen == old) return cur;
    old = seen;
  }
}
#define CC_ULL(p) reinterpret_cast<unsigned long long*>(p)
#define CC_NATIVE(T)                                                                   \
  __device__ __forceinline__ T cc_atomic_add(T* p, T v) { return atomicAdd(p, v); }   \
  __device__ __forceinline__ T cc_atomic_max(T* p, T v) { return atomicMax(p, v); }   \
  __device__ __forceinline__ T cc_atomic_min(T* p, T v) { return atomicMin(p, v); }   \
  __device__ __forceinline__ T cc_atomic_exchange(T* p, T v) { return atomicExch(p, v); } \
  __device__ __forceinline__ T cc_atomic_compare_exchange(T* p, T c, T v) {            \
    return atomicCAS(p, c, v);                                                         \
  }
CC_NATIVE(int)
CC_NATIVE(unsigned int)
CC_NATIVE(unsigned long long)
__device__ __forceinline__ int cc_atomic_sub(int* p, int v) { return atomicSub(p, v); }
__device__ __forceinline__ unsigned int cc_atomic_sub(unsigned int* p, unsigned int v) {
  return atomicSub(p, v);
}
__device__ __forceinline__ unsigned long long cc_atomic_sub(unsigned long long* p,
                                                            unsigned long long v) {
  return atomicAdd(p, 0ull - v);
}
__device__ __forceinline__ long long cc_atomic_add(long long* p, long long v) {
  return (long long)atomicAdd(CC_ULL(p), (unsigned long long)v);
}
__device__ __forceinline__ long long cc_atomic_sub(long long* p, long long v) {
  return (long long)atomicAdd(CC_ULL(p), 0ull - (unsigned long long)v);
}
__device__ __forceinline__ long long cc_atomic_max(long long* p, long long v) {
  return atomicMax(p, v);
}
__device__ __forceinline__ long long cc_atomic_min(long long* p, long long v) {
  return atomicMin(p, v);
}
__device__ __forceinline__ long long cc_atomic_exchange(long long* p, long long v) {
  return (long long)atomicExch(CC_ULL(p), (unsigned long long)v);
}
__device__ __forceinline__ long long cc_atomic_compare_exchange(long long* p, long long c,
                                                                long long v) {
  return (long long)atomicCAS(CC_ULL(p), (unsigned long long)c, (unsigned long long)v);
}
#define CC_FLOAT_ATOMICS(T)                                                            \
  __device__ __forceinline__ T cc_atomic_add(T* p, T v) { return atomicAdd(p, v); }   \
  __device__ __forceinline__ T cc_atomic_sub(T* p, T v) { return atomicAdd(p, -v); }  \
  __device__ __forceinline__ T cc_atomic_max(T* p, T v) {                              \
    return cc_atomic_update(p, [=](T c) { return cc_max(c, v); });                     \
  }                                                                                    \
  __device__ __forceinline__ T cc_atomic_min(T* p, T v) {                              \
    return cc_atomic_update(p, [=](T c) { return cc_min(c, v); });                     \
  }                                                                                    \
  __device__ __forceinline__ T cc_atomic_exchange(T* p, T v) {                         \
    return cc_atomic_update(p, [=](T) { return v; });                                  \
  }                                                                                    \
  __device__ __forceinline__ T cc_atomic_compare_exchange(T* p, T c, T v) {            \
    return cc_atomic_cas_float(p, c, v);                                               \
  }
CC_FLOAT_ATOMICS(float)
CC_FLOAT_ATOMICS(double)
CC_FLOAT_ATOMICS(__half)

// ---------------------------------------------------------------- planes (warps)
template <typename T> __device__ __forceinline__ T cc_shfl(unsigned int m, T v, int lane) {
  return __shfl_sync(m, v, lane);
}
template <typename T> __device__ __forceinline__ T cc_shfl_xor(unsigned int m, T v, int o) {
  return __shfl_xor_sync(m, v, o);
}
__device__ __forceinline__ bool cc_shfl(unsigned int m, bool v, int lane) {
  return __shfl_sync(m, (int)v, lane) != 0;
}
template <typename T> __device__ T cc_plane_sum(T v) {
  const unsigned int m = __activemask();
  if (m == 0xffffffffu) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = cc_add(v, cc_shfl_xor(m, v, o));
    return v;
  }
  T acc = cc_zero<T>();
  for (int i = 0; i < 32; ++i)
    if ((m >> i) & 1u) acc = cc_add(acc, cc_shfl(m, v, i));
  return acc;
}
template <typename T> __device__ T cc_plane_max(T v) {
  const unsigned int m = __activemask();
  if (m == 0xffffffffu) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = cc_max(v, cc_shfl_xor(m, v, o));
    return v;
  }
  const int first = __ffs(m) - 1;
  T acc = cc_shfl(m, v, first);
  for (int i = first + 1; i < 32; ++i)
    if ((m >> i) & 1u) acc = cc_max(acc, cc_shfl(m, v, i));
  return acc;
}
// Lanes outside the plane, or not active here, give 0.
template <typename T, typename L> __device__ T cc_plane_broadcast(T v, L lane) {
  const unsigned int m = __activemask();
  const unsigned int src = (unsigned int)lane & 31u;
  const T r = cc_shfl(m, v, (int)src);
  return (cc_in(lane, 32u) && ((m >> src) & 1u)) ? r : cc_zero<T>();
}
""".lstrip()
"""The helpers' source, included at the top of every generated kernel."""
