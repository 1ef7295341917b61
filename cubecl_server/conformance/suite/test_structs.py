"""Structs as kernel parameters against NumPy: array and scalar fields read, an array
field written and counted by an atomic, a struct passed whole to a helper, lengths that
do not divide the cube and two structs of different widths."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

DIM = 64


@pytest.mark.requires("atomics:u32")
def test_fields_read_written_and_passed_to_a_helper(cubecl_client: ComputeClient,
                                                    cubecl_rng: np.random.Generator,
                                                    cubecl_seed: int) -> None:
    c = cubecl_client
    n = random_size(cubecl_rng, DIM)
    m = int(cubecl_rng.integers(n // 2, n))  # dst is narrower
    a = values(cubecl_rng, ir.Elem.F32, n, edges=False)
    before = np.full(n, -7.0, np.float32)
    s1, s2 = (np.float32(cubecl_rng.uniform(-3, 3)) for _ in range(2))
    dst_data, counts = c.create(before), c.create(np.zeros(1, np.uint32))
    src = kernels.Tile(c.create(a), np.uint32(n), s1, c.create(np.zeros(1, np.uint32)))
    dst = kernels.Tile(dst_data, np.uint32(m), s2, counts)
    kernels.struct_kernel.launch(c, cubes_for(n, DIM), CubeDim(DIM), src, dst)
    want = before.copy()
    want[:m] = a[:m] * s1 + s2
    check(c.read(dst_data), want, f"dst.data[i] = src.data[i] * {s1} + {s2} below "
          f"widths {n} and {m}", cubecl_seed, inputs={"a": a})
    check(c.read(counts), np.array([m], np.uint32), "atomic_add on a struct's array field",
          cubecl_seed)
    with pytest.raises(TypeError, match="parameter 'dst' is a struct Tile, got Handle"):
        kernels.struct_kernel.launch(c, 1, DIM, src, dst_data)
