"""A launch forgives plain values: ints and tuples for the geometry, and a helper for
covering ``n`` elements; anything else is a TypeError naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import kernels

from cubecl_server.client import create_client
from cubecl_server.lang import CubeCount, CubeDim


def test_ints_and_tuples_launch_like_the_geometry_they_stand_for() -> None:
    c = create_client("cpu")
    rng = np.random.default_rng()
    n = int(rng.integers(300, 1000))
    data = rng.standard_normal(n).astype(np.float32)
    a = c.create(data)
    for count, dim in ((CubeCount.cover(n, 64), 64), (CubeCount.cover(n, 32).x, (32,)),
                       ((CubeCount.cover(n, 128).x, 1, 1), (128, 1, 1))):
        out = c.create(np.zeros(n, np.float32))
        kernels.scale.launch(c, count, dim, a, out, 3.0)
        np.testing.assert_array_equal(c.read(out), data * np.float32(3.0))
    c.prepare(kernels.scale, 64)
    assert c.artifact_id(kernels.scale, 64, {}) == c.artifact_id(kernels.scale,
                                                                  CubeDim(64), {})


def test_cover_is_the_ceiling_division() -> None:
    assert CubeCount.cover(1000, 256) == CubeCount(4)
    assert CubeCount.cover(1024, CubeDim(16, 16)) == CubeCount(4)
    assert CubeCount.cover(1025, (16, 16)) == CubeCount(5)
    assert CubeCount.cover(0, 64) == CubeCount(0)


@pytest.mark.parametrize(("count", "dim", "message"), [
    ("4", 64, "cube_count must be a CubeCount, an int or a tuple of 1 to 3 ints, got str"),
    (4, 64.0, "cube_dim must be a CubeDim, an int or a tuple of 1 to 3 ints, got float"),
    ((1, 2, 3, 4), 64, "cube_count must be .* got tuple"),
    (True, 64, "cube_count must be .* got bool"),
    (4, [64], "cube_dim must be .* got list"),
])
def test_any_other_value_is_a_type_error_naming_the_parameter(
        count: object, dim: object, message: str) -> None:
    c = create_client("cpu")
    a, out = c.create(np.ones(8, np.float32)), c.empty(8, np.float32)
    with pytest.raises(TypeError, match=message):
        kernels.scale.launch(c, count, dim, a, out, 2.0)  # type: ignore[arg-type]
    assert out.taint is None


def test_a_negative_extent_is_still_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"CubeCount.x must be a non-negative int, got -1"):
        CubeCount.of(-1)
    with pytest.raises(ValueError, match=r"CubeDim.y must be a positive int, got 0"):
        CubeDim.of((8, 0))
