"""A launch the device cannot hold fails at once, naming the limit, before compiling."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import create_client, recording
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
    u32,
    u64,
)
from cubecl_server.validation import check_launch, shared_memory_bytes


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


def test_a_barrier_on_a_device_without_barriers_is_refused() -> None:
    c = create_client("cpu")
    caps = dataclasses.replace(c.capabilities, barrier=False)
    with pytest.raises(LaunchError, match=r"'hoard' synchronises its cube .*"
                                          r"Capabilities.barrier is False"):
        check_launch(hoard.ir(), CubeDim(32), caps)
    check_launch(high_word.ir(), CubeDim(32), caps)  # no barrier: nothing to refuse


def test_too_large_a_cube_is_refused() -> None:
    c = create_client("cpu")
    with pytest.raises(LaunchError, match="32x33x1 = 1056 units exceeds"):
        c.prepare(hoard, CubeDim(32, 33))


@kernel
def high_word(a: Array[u32], out: Array[u32]) -> None:
    """The high word of a square: u64 appears only inside one expression."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = u32((u64(a[i]) * u64(a[i])) >> u64(32))


def test_a_device_without_64_bit_integers_refuses_a_kernel_using_them() -> None:
    k = high_word.ir()
    assert ir.Elem.U64 in k.elems
    caps = create_client("cpu").capabilities
    check_launch(k, CubeDim(32), caps)
    with pytest.raises(LaunchError, match=r"'high_word' uses u64, and the device has no "
                                          r"64-bit integers"):
        check_launch(k, CubeDim(32), dataclasses.replace(caps, int64=False))
    check_launch(hoard.ir(), CubeDim(32), dataclasses.replace(
        caps, int64=False, shared_memory_bytes=10**6))
