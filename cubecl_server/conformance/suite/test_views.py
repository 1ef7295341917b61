"""Views of buffers made on the host (``client.view``: strides and an offset), with
``rank`` and ``buffer_len``, and ``sync_plane``, against NumPy on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.lang import CubeDim

DIM = 64
SENTINEL = np.float32(-7.25)


def _offset(c: ComputeClient, rng: np.random.Generator) -> int:
    """A view's first element: odd where the device starts a binding anywhere, else a
    nonzero multiple of its alignment (in f32 elements)."""
    step = max(1, c.capabilities.view_alignment // 4)
    return int(rng.integers(1, 4)) * step + (int(rng.integers(0, 2)) * 2 + 1 if step == 1 else 0)


def _elements(base: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
              offset: int) -> np.ndarray:
    """The elements of a view of the flat ``base`` (NumPy's own strided view, copied)."""
    size = base.dtype.itemsize
    return np.lib.stride_tricks.as_strided(base[offset:], shape,
                                           tuple(s * size for s in strides)).copy()


def _span(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


class TestViews:
    """A transposed view read and a strided, offset view written through their shapes
    and strides, every other element of the buffers left as it was; ``len`` is the
    logical length, ``buffer_len`` the span, ``rank`` the axes; flat accesses past a
    view's span read 0 and drop the store in checked mode."""

    def test_strided_views_read_and_write_only_their_elements(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c, rng = cubecl_client, cubecl_rng
        rows, cols = int(rng.integers(3, 9)), int(rng.integers(5, 23))  # rows x cols view
        # a: the transpose of a (cols, rows + pad) matrix that starts at an offset
        pad, at_a = int(rng.integers(1, 4)), _offset(c, rng)
        a_shape, a_strides = (rows, cols), (1, rows + pad)
        src = values(rng, ir.Elem.F32, at_a + _span(a_shape, a_strides) + 3)
        # out: every other element of every third row of a wider matrix, at an offset
        at_o, row = _offset(c, rng), 2 * cols + int(rng.integers(1, 5))
        o_shape, o_strides = (rows, cols), (3 * row, 2)
        before = values(rng, ir.Elem.F32, at_o + _span(o_shape, o_strides) + 5, edges=False)
        sb, db = c.create(src), c.create(before)
        a, out = c.view(sb, a_shape, a_strides, at_a), c.view(db, o_shape, o_strides, at_o)
        meta = c.create(np.zeros(8, np.uint32))
        kernels.strided.launch(c, cubes_for(rows * cols, DIM), CubeDim(DIM), a, out, meta)
        want = before.copy()
        view = np.lib.stride_tricks.as_strided(want[at_o:], o_shape,
                                               tuple(4 * s for s in o_strides))
        view[...] = _elements(src, a_shape, a_strides, at_a) * np.float32(2) + np.float32(1)
        check(c.read(db), want, f"2 * a + 1 from a {a_shape} view of strides {a_strides} "
              f"at {at_a} into one of strides {o_strides} at {at_o} (the rest unchanged)",
              cubecl_seed, exact=False)
        check(c.read(sb), src, "the buffer a view was read from", cubecl_seed)
        check(c.read(meta)[:7], np.array(
            [rows * cols, _span(a_shape, a_strides), 2, rows * cols, _span(o_shape, o_strides),
             2, 1], np.uint32), "len, buffer_len and rank of both views, rank of a buffer",
              cubecl_seed)

    def test_flat_accesses_stop_at_the_views_span(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c, rng = cubecl_client, cubecl_rng
        n = random_size(rng, DIM)
        shape = (int(rng.integers(3, 8)), int(rng.integers(2, 6)))
        strides = (2 * shape[1] + 1, 2)
        span = _span(shape, strides)
        assert span < n, "the launch must reach past the view"
        at_a, at_w = _offset(c, rng), _offset(c, rng)
        src = values(rng, ir.Elem.F32, at_a + span + 4)
        before = np.full(at_w + span + 4, SENTINEL, np.float32)
        wb = c.create(before)
        out = c.empty(n, np.float32)
        kernels.view_edges.launch(c, cubes_for(n, DIM), CubeDim(DIM),
                                  c.view(c.create(src), shape, strides, at_a),
                                  c.view(wb, shape, strides, at_w), out)
        want = np.zeros(n, np.float32)
        want[:span] = src[at_a:at_a + span]
        check(c.read(out), want, f"a[i] of a view of buffer_len {span}, to {n} (0 past it)",
              cubecl_seed)
        written = before.copy()
        written[at_w:at_w + span] = np.arange(span, dtype=np.float32)
        length = shape[0] * shape[1]
        written[at_w:at_w + length] += np.float32(0.5)
        check(c.read(wb), written, f"w[i] = i to {n} on a view of buffer_len {span} at "
              f"{at_w}, + 0.5 under i < len(w) = {length} (the rest unchanged)", cubecl_seed)

    def test_views_refused(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        h = c.create(np.zeros(64, np.float32))
        for shape, strides, offset, what in (
                ((4, 4), (4, 2), 0, "overlap"), ((3,), (0,), 0, "positive"),
                ((10,), (8,), 0, "past"), ((2, 2), (1,), 0, "one per axis")):
            with pytest.raises(ValueError, match=what):
                c.view(h, shape, strides, offset)
        align = c.capabilities.view_alignment
        if align > 4:
            with pytest.raises(ValueError, match="view_alignment"):
                c.view(h, (4,), None, 1)
        view = c.view(h, (4,), (2,), 0)
        with pytest.raises(TypeError, match="got View"):
            c.read(view)


class TestSyncPlane:
    """``sync_plane()``: values written to shared memory before it are read by the next
    unit of the plane after it."""

    @pytest.mark.requires("plane")
    @pytest.mark.requires("shared_memory:256")
    def test_sync_plane_shares_shared_memory_within_a_plane(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        size = c.capabilities.plane_size
        assert size is not None, "the plane marker let a backend without planes through"
        if DIM % size:
            pytest.skip(f"plane size {size} does not divide the cube of {DIM}")
        n = random_size(cubecl_rng, DIM)
        v = values(cubecl_rng, ir.Elem.F32, n)
        out = c.empty(n, np.float32)
        kernels.plane_sync.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(v), out)
        unit = np.arange(n)
        src = unit - unit % size + (unit % size + 1) % size
        padded = np.concatenate([v, np.zeros(DIM, np.float32)])
        check(c.read(out), padded[src], f"the next unit's value of a plane of {size}",
              cubecl_seed)
