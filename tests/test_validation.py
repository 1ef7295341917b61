"""A launch the device cannot hold fails at once, naming the limit, before compiling."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.errors import LaunchError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    CubeCount,
    CubeDim,
    f32,
    kernel,
    shared,
    sync_cube,
)
from cubecl_server.runtime import create_client, recording
from cubecl_server.validation import shared_memory_bytes


@kernel
def hoard(out: Array[f32]) -> None:
    """Declares 80 KB of shared memory: more than the cpu backend's 64 KiB."""
    tile = shared(f32, 20000)
    tile[UNIT_POS] = f32(1.0)
    sync_cube()
    if ABSOLUTE_POS < len(out):
        out[ABSOLUTE_POS] = tile[UNIT_POS]


def test_too_much_shared_memory_is_refused_before_compiling() -> None:
    c = create_client("cpu")
    assert shared_memory_bytes(hoard.ir()) == 80000
    out = c.empty(32, np.float32)
    with recording(c) as records, pytest.raises(
            LaunchError, match=r"need 80000 bytes per cube, the device has 65536 "
                               r"\(tile: 20000 x f32\)"):
        hoard.launch(c, CubeCount(1), CubeDim(32), out)
    assert records == []  # nothing was compiled


def test_too_large_a_cube_is_refused() -> None:
    c = create_client("cpu")
    with pytest.raises(LaunchError, match="32x33x1 = 1056 units exceeds"):
        c.prepare(hoard, CubeDim(32, 33))
