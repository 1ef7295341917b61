"""Tensor maps on CUDA: which architectures take them, how a kernel receives one, and
encoding a :class:`~cubecl_server.backend.features.TensorMap` into the 128-byte ``CUtensorMap``
the driver builds (``cuTensorMapEncodeTiled``).

A kernel takes the encoded map as a ``const __grid_constant__ CUtensorMap`` parameter,
passed by value like any other argument (:func:`tensor_map_value`: the 128 bytes as
one NumPy structured value, which CuPy passes by value). The kernel language's
``TensorMap[T]`` parameters and ``tma_load`` are lowered by the compiler
(:mod:`cubecl_cuda.compiler`); :data:`COPY_TILE_SOURCE` is a hand-written kernel of
the same shape, compiled through NVRTC (``compile_tensor_map_kernel``) to check the
parameter type and the ``cp.async.bulk.tensor`` instruction without a GPU.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

from cubecl_cuda import nvrtc
from cubecl_server.backend import BackendUnavailable
from cubecl_server.backend.features import TENSOR_MAP_BYTES, TensorMap, TmaFill
from cubecl_server.backend.support import DriverError

__all__ = ["COPY_TILE_SOURCE", "TMA_MIN_ARCH", "arch_has_tma", "compile_tensor_map_kernel",
           "encode_tiled", "tensor_map_value"]

TMA_MIN_ARCH = 90
"""The first architecture with the tensor memory accelerator (Hopper, sm_90)."""

COPY_TILE_SOURCE = r"""
// CUtensorMap as cuda.h declares it: 128 opaque bytes, 64-byte aligned.
typedef struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; } CUtensorMap;

// One thread loads a box of 16 x 16 floats at (x, y) of the tensor the map describes
// into shared memory through the TMA unit, then the block writes it to out.
extern "C" __global__ void copy_tile(const __grid_constant__ CUtensorMap map, float* out,
                                     int x, int y) {
    __shared__ alignas(128) float tile[16 * 16];
    __shared__ alignas(8) unsigned long long barrier;
    unsigned int bar = static_cast<unsigned int>(__cvta_generic_to_shared(&barrier));
    unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(tile));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar));
        asm volatile("fence.proxy.async.shared::cta;");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar), "r"(16 * 16 * 4));
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];"
            :: "r"(dst), "l"(&map), "r"(x), "r"(y), "r"(bar) : "memory");
    }
    __syncthreads();
    unsigned int done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;"
                     " selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar));
    }
    for (unsigned int i = threadIdx.x; i < 16 * 16; i += blockDim.x) {
        out[i] = tile[i];
    }
}
"""


def arch_has_tma(arch: str) -> bool:
    """Whether ``arch`` (``sm_90``, ``sm_90a``, ``sm_100``...) has tensor maps."""
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return bool(digits) and int(digits) >= TMA_MIN_ARCH


def compile_tensor_map_kernel(arch: str) -> nvrtc.NvrtcOutput:
    """:data:`COPY_TILE_SOURCE` compiled for ``arch`` by NVRTC (no GPU needed);
    ``NvrtcFailure`` with NVRTC's log when it does not compile, ValueError for an
    architecture without tensor maps."""
    if not arch_has_tma(arch):
        raise ValueError(f"{arch} has no tensor memory accelerator (sm_{TMA_MIN_ARCH} and "
                         "later have)")
    return nvrtc.compile_source(COPY_TILE_SOURCE, "copy_tile.cu",
                                [f"--gpu-architecture={arch}", "--std=c++17"])


# CUtensorMapDataType of each element type TMA moves.
_DATA_TYPES = {"u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7, "f64": 8}


@cache
def _libcuda() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise BackendUnavailable(f"no CUDA driver (libcuda.so.1) to encode a tensor map: {e}") \
            from e


def encode_tiled(tmap: TensorMap, address: int) -> bytes:
    """The 128 bytes of ``tmap`` over the device memory at ``address``, encoded by the
    driver: :class:`~cubecl_server.backend.features.TensorMapError` first for a map the rules
    refuse, ``DriverError`` if the driver refuses it anyway."""
    import dataclasses

    tmap = dataclasses.replace(tmap, address=address).validate()
    rank = tmap.rank
    u64s = ctypes.c_uint64 * 5
    u32s = ctypes.c_uint32 * 5
    out = (ctypes.c_uint8 * 128)()
    steps = tmap.element_strides or (1,) * rank
    fill = 1 if tmap.fill is TmaFill.NAN else 0
    status = _libcuda().cuTensorMapEncodeTiled(
        ctypes.byref(out), ctypes.c_int(_DATA_TYPES[tmap.elem.value]), ctypes.c_uint32(rank),
        ctypes.c_void_p(address), u64s(*tmap.shape), u64s(*tmap.strides),
        u32s(*tmap.box), u32s(*steps),
        ctypes.c_int({0: 0, 16: 1, 32: 2}[tmap.interleave.value]),
        ctypes.c_int({0: 0, 32: 1, 64: 2, 128: 3}[tmap.swizzle.value]),
        ctypes.c_int(0), ctypes.c_int(fill))
    if status != 0:
        raise DriverError("cuda", "cuTensorMapEncodeTiled", status, "CUresult")
    return bytes(out)


_MAP_VALUE = np.dtype([("opaque", "<u8", (16,))], align=True)


def tensor_map_value(raw: bytes) -> np.void:
    """The 128 bytes of an encoded map as the launch argument CuPy passes by value."""
    if len(raw) != TENSOR_MAP_BYTES:
        raise ValueError(f"an encoded tensor map is {TENSOR_MAP_BYTES} bytes, not {len(raw)}")
    return np.frombuffer(raw, dtype=_MAP_VALUE)[0]
