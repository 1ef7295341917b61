"""Tensor maps on CUDA: ``TensorMap[T]`` and ``tma_load`` lowered to a
``__grid_constant__`` map and ``cp.async.bulk.tensor``, compiled by NVRTC for sm_90;
refused for sm_80; launched with the driver's encoding where a GPU is."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from cubecl_cuda import nvrtc
from cubecl_cuda.compile_only import CompileOnlyServer
from cubecl_cuda.compiler import CudaCompiler
from cubecl_cuda.tma import compile_tensor_map_kernel, tensor_map_value
from cuda_support import gpu_present

import cubecl_server.lang as cl
from cubecl_server.client import create_client
from cubecl_server.errors import CompilationError, LaunchError
from cubecl_server.execution import ExecutionMode
from cubecl_server.ir import Elem
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.tma import TensorMap, TensorMapArg

BOX = 8


@cl.kernel
def tiles_3d(m: cl.TensorMap[cl.i32], out: cl.Array[cl.i32], cols: cl.u32) -> None:
    """Box (8, 8, 1) of a 3-d map at the cube's (x, y) and layer 0, then a second
    load of layer 1 into the same tile: both written to ``out``, side by side."""
    tile = cl.shared(cl.i32, BOX * BOX)
    x = cl.i32(cl.CUBE_POS_X * BOX)
    y = cl.i32(cl.CUBE_POS_Y * BOX)
    row = cl.CUBE_POS_Y * BOX + cl.UNIT_POS // BOX
    col = cl.CUBE_POS_X * BOX + cl.UNIT_POS % BOX
    for layer in range(2):
        cl.tma_load(m, tile, x, y, cl.i32(layer))
        out[(layer * (cl.CUBE_COUNT_Y * BOX) + row) * cols + col] = tile[cl.UNIT_POS]


def test_capability_is_on_for_sm90_only() -> None:
    assert CompileOnlyServer("sm_90").capabilities.tma is True
    assert CompileOnlyServer("sm_80").capabilities.tma is False


def test_a_kernel_taking_a_tensor_map_compiles_for_sm90() -> None:
    out = compile_tensor_map_kernel("sm_90")
    assert b"cp.async.bulk.tensor.2d" in out.ptx and out.cubin
    assert b".param .align 64 .b8 copy_tile_param_0[128]" in out.ptx
    with pytest.raises(ValueError, match="no tensor memory accelerator"):
        compile_tensor_map_kernel("sm_80")


def test_the_lowering_compiles_to_a_bulk_tensor_copy_for_sm90() -> None:
    k = tiles_3d.ir()
    compiled = CudaCompiler(tma=True).compile(k, CubeDim(BOX * BOX), ExecutionMode.CHECKED)
    kinds = [p.kind for p in compiled.repr.params]
    assert kinds[:2] == ["array", "tensor_map"], kinds
    out = nvrtc.compile_source(compiled.source, "tiles_3d.cu",
                               ["--gpu-architecture=sm_90", "--std=c++17"])
    assert out.cubin, "NVRTC made no cubin"
    ptx = out.ptx.decode()
    assert "cp.async.bulk.tensor.3d.shared::cluster.global.tile" in ptx
    assert "mbarrier.try_wait.parity" in ptx
    assert f".param .align 64 .b8 {compiled.entry_point}_param_1[128]" in ptx


def test_sm80_refuses_tensor_maps_naming_the_capability() -> None:
    k = tiles_3d.ir()
    with pytest.raises(CompilationError, match="`tma` capability"):
        CudaCompiler(tma=False).compile(k, CubeDim(BOX * BOX), ExecutionMode.CHECKED)
    c = create_client("cuda", compile_only=True)
    c.server.capabilities = dataclasses.replace(c.server.capabilities, tma=False)
    with pytest.raises(LaunchError, match="`tma` capability"):
        c.prepare(tiles_3d, BOX * BOX)


def test_an_encoded_map_travels_as_128_bytes_by_value() -> None:
    raw = bytes(range(128))
    value = tensor_map_value(raw)
    assert isinstance(value, np.void) and value.dtype.itemsize == 128
    assert value.tobytes() == raw
    with pytest.raises(ValueError, match="128 bytes, not 64"):
        tensor_map_value(raw[:64])


@pytest.mark.skipif(not gpu_present(), reason="no CUDA GPU here: the launch runs where one "
                    "is (an sm_90 or later device)")
def test_boxes_of_a_3d_map_load_on_the_gpu() -> None:
    c = create_client("cuda")
    if not c.capabilities.tma:
        pytest.skip(f"{c.device.name} is before sm_90: no tensor maps")
    rng = np.random.default_rng(21)
    depth, height, width = 2, 13, 21  # the last boxes overhang the tensor
    data = rng.integers(-2**31, 2**31, (depth, height, 24), dtype=np.int32)
    rows, cols = -(-height // BOX) * BOX, -(-width // BOX) * BOX
    src, out = c.create(data), c.create(np.full(depth * rows * cols, 7, np.int32))
    tmap = TensorMap(Elem.I32, (width, height, depth), (24 * 4, 24 * 4 * height),
                     (BOX, BOX, 1))
    tiles_3d.launch(c, CubeCount(cols // BOX, rows // BOX), CubeDim(BOX * BOX),
                    TensorMapArg(tmap, src), out, np.uint32(cols))
    want = np.zeros((depth, rows, cols), np.int32)
    want[:, :height, :width] = data[:, :, :width]
    np.testing.assert_array_equal(c.read(out).reshape(depth, rows, cols), want)
