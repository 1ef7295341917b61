"""Tensor maps: a kernel taking a ``TensorMap[T]`` loads boxes of a tensor into shared
memory where the device has the ``tma`` capability, and is refused, naming it,
everywhere else."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient
from cubecl_server.errors import LaunchError
from cubecl_server.ir import Elem
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.lang import (
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS,
    Array,
    TensorMap,
    f32,
    i32,
    kernel,
    shared,
    tma_load,
    u32,
)
from cubecl_server.tma import TensorMap as TensorMapDescription
from cubecl_server.tma import TensorMapArg

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

BOX = 16


@kernel
def copy_tiles(m: TensorMap[f32], out: Array[f32], cols: u32) -> None:
    """Each cube loads the 16 x 16 box at its position and writes it, plus one, to
    ``out`` (rows of ``cols``, every box whole)."""
    tile = shared(f32, BOX * BOX)
    tma_load(m, tile, i32(CUBE_POS_X * BOX), i32(CUBE_POS_Y * BOX))
    x = CUBE_POS_X * BOX + UNIT_POS % BOX
    y = CUBE_POS_Y * BOX + UNIT_POS // BOX
    out[y * cols + x] = tile[UNIT_POS] + 1.0


class TestTensorMaps:
    """What a user of tensor maps relies on, with the capability and without."""

    @pytest.mark.compile_only
    def test_refused_naming_the_capability_without_it(self, cubecl_client: ComputeClient
                                                      ) -> None:
        if cubecl_client.capabilities.tma:
            pytest.skip(f"backend {cubecl_client.backend!r} has the tma capability: nothing "
                        "to refuse")
        with pytest.raises(LaunchError, match="`tma` capability"):
            cubecl_client.prepare(copy_tiles, BOX * BOX)

    @pytest.mark.compile_only
    @pytest.mark.requires("tma")
    def test_compiles_where_the_capability_is(self, cubecl_client: ComputeClient) -> None:
        cubecl_client.prepare(copy_tiles, BOX * BOX)

    @pytest.mark.requires("tma")
    def test_boxes_load_the_tensor_with_zeros_outside(self, cubecl_client: ComputeClient,
                                                      cubecl_rng: np.random.Generator) -> None:
        c = cubecl_client
        height, width = 37, 52  # neither divides into boxes: the last boxes overhang
        pitch = 64  # a row's stride must be a multiple of 16 bytes
        data = cubecl_rng.standard_normal((height, pitch), dtype=np.float32)
        data[0, 0], data[-1, width - 1] = np.inf, -0.0
        rows, cols = -(-height // BOX) * BOX, -(-width // BOX) * BOX
        src, out = c.create(data), c.create(np.full(rows * cols, -7.0, np.float32))
        tmap = TensorMapDescription(Elem.F32, (width, height), (pitch * 4,), (BOX, BOX))
        copy_tiles.launch(c, CubeCount(cols // BOX, rows // BOX), CubeDim(BOX * BOX),
                          TensorMapArg(tmap, src), out, np.uint32(cols))
        want = np.zeros((rows, cols), np.float32)  # the map's fill outside the tensor
        want[:height, :width] = data[:, :width]
        np.testing.assert_array_equal(c.read(out).reshape(rows, cols), want + np.float32(1))
