"""The CUDA C++ prelude every generated kernel starts with: ``cuda_fp16.h`` and the
plane (warp) operations, as templates over the value's type.

Everything else the IR needs beyond C++ the core's C-family emitter writes into each
kernel as helper functions (wrapping arithmetic, division by zero, checked loads...).
Plane operations act on the units active at the call (``__activemask``): a butterfly
of ``__shfl_xor_sync`` when the whole warp is there, a walk over the active lanes with
``__shfl_sync`` otherwise, so a short last warp of a cube and divergent code both see
only their active units. Sums wrap on signed integers, as the IR's ``+`` does; the
maximum of floats is ``fmax``'s (a NaN loses).
"""

from __future__ import annotations

__all__ = ["PRELUDE", "PLANE_SIZE"]

PLANE_SIZE = 32
"""Units per plane: the CUDA warp size."""

PRELUDE = r"""
#include <cuda_fp16.h>

template <typename T> __device__ __forceinline__ T cc_zero() { return T(0); }
template <> __device__ __forceinline__ __half cc_zero<__half>() {
  return __ushort_as_half((unsigned short)0u);
}
template <typename T> __device__ __forceinline__ T cc_fold_add(T a, T b) { return a + b; }
__device__ __forceinline__ int cc_fold_add(int a, int b) {
  return (int)((unsigned int)a + (unsigned int)b);
}
__device__ __forceinline__ long long cc_fold_add(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b);
}
template <typename T> __device__ __forceinline__ T cc_fold_max(T a, T b) { return a < b ? b : a; }
__device__ __forceinline__ float cc_fold_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double cc_fold_max(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ __half cc_fold_max(__half a, __half b) {
  return __float2half_rn(fmaxf(__half2float(a), __half2float(b)));
}
template <typename T> __device__ __forceinline__ T cc_fold_min(T a, T b) { return b < a ? b : a; }
__device__ __forceinline__ float cc_fold_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double cc_fold_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ __half cc_fold_min(__half a, __half b) {
  return __float2half_rn(fminf(__half2float(a), __half2float(b)));
}
template <typename T> __device__ __forceinline__ T cc_fold_mul(T a, T b) { return a * b; }
__device__ __forceinline__ int cc_fold_mul(int a, int b) {
  return (int)((unsigned int)a * (unsigned int)b);
}
__device__ __forceinline__ long long cc_fold_mul(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}
__device__ __forceinline__ __half cc_fold_mul(__half a, __half b) {
  return __float2half_rn(__half2float(a) * __half2float(b));
}
template <typename T> __device__ __forceinline__ T cc_shfl(unsigned int m, T v, int lane) {
  return __shfl_sync(m, v, lane);
}
__device__ __forceinline__ bool cc_shfl(unsigned int m, bool v, int lane) {
  return __shfl_sync(m, (int)v, lane) != 0;
}
template <typename T> __device__ T cc_plane_sum(T v) {
  const unsigned int m = __activemask();
  if (m == 0xffffffffu) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = cc_fold_add(v, __shfl_xor_sync(m, v, o));
    return v;
  }
  T acc = cc_zero<T>();
  for (int i = 0; i < 32; ++i)
    if ((m >> i) & 1u) acc = cc_fold_add(acc, cc_shfl(m, v, i));
  return acc;
}
template <typename T> __device__ T cc_plane_max(T v) {
  const unsigned int m = __activemask();
  if (m == 0xffffffffu) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = cc_fold_max(v, __shfl_xor_sync(m, v, o));
    return v;
  }
  const int first = __ffs(m) - 1;
  T acc = cc_shfl(m, v, first);
  for (int i = first + 1; i < 32; ++i)
    if ((m >> i) & 1u) acc = cc_fold_max(acc, cc_shfl(m, v, i));
  return acc;
}
// This unit's lane in its warp: warps are cut from the block's linear thread index.
__device__ __forceinline__ unsigned int cc_lane() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
}
// The folds below walk the active lanes in lane order, from the first.
#define CC_PLANE_FOLD(NAME, FOLD)                                         \
  template <typename T> __device__ T NAME(T v) {                          \
    const unsigned int m = __activemask();                                \
    const int first = __ffs(m) - 1;                                       \
    T acc = cc_shfl(m, v, first);                                         \
    for (int i = first + 1; i < 32; ++i)                                  \
      if ((m >> i) & 1u) acc = FOLD(acc, cc_shfl(m, v, i));               \
    return acc;                                                           \
  }
CC_PLANE_FOLD(cc_plane_min, cc_fold_min)
CC_PLANE_FOLD(cc_plane_prod, cc_fold_mul)
__device__ bool cc_plane_all(bool c) { return __all_sync(__activemask(), c); }
__device__ bool cc_plane_any(bool c) { return __any_sync(__activemask(), c); }
__device__ unsigned int cc_plane_ballot(bool c) { return __ballot_sync(__activemask(), c); }
// The running sum (or, prod, product) over the active lanes below (and, inclusive,
// at) this one.
template <typename T> __device__ T cc_plane_scan(T v, bool inclusive, bool prod = false) {
  const unsigned int m = __activemask();
  const int me = (int)cc_lane();
  T acc = prod ? (T)1 : cc_zero<T>();
  for (int i = 0; i < 32; ++i) {
    const T x = cc_shfl(m, v, i);
    if (((m >> i) & 1u) && (i < me || (inclusive && i == me)))
      acc = prod ? cc_fold_mul(acc, x) : cc_fold_add(acc, x);
  }
  return acc;
}
template <typename T> __device__ T cc_plane_inclusive_sum(T v) { return cc_plane_scan(v, true); }
template <typename T> __device__ T cc_plane_exclusive_sum(T v) {
  return cc_plane_scan(v, false);
}
template <typename T> __device__ T cc_plane_inclusive_prod(T v) {
  return cc_plane_scan(v, true, true);
}
template <typename T> __device__ T cc_plane_exclusive_prod(T v) {
  return cc_plane_scan(v, false, true);
}
template <typename T> __device__ T cc_plane_shuffle_xor(T v, unsigned int mask) {
  return cc_shfl(__activemask(), v, (int)((cc_lane() ^ mask) & 31u));
}
// Lanes outside the plane, or not active here, give 0.
template <typename T> __device__ T cc_plane_broadcast(T v, unsigned int lane) {
  const unsigned int m = __activemask();
  const T r = cc_shfl(m, v, (int)(lane & 31u));
  return (lane < 32u && ((m >> (lane & 31u)) & 1u)) ? r : cc_zero<T>();
}
template <typename T> __device__ T cc_plane_shuffle(T v, unsigned int lane) {
  return cc_plane_broadcast(v, lane);
}
""".lstrip()
"""The prelude's source, at the top of every generated kernel."""
