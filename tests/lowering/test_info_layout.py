"""The info words of a launch (scalars, lengths, extents, strides, the cube count) and
folding a cube count past a per-axis dispatch limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cubecl_server.backend import CubeCount
from cubecl_server.backend.lowering import InfoEntry, InfoLayout, InfoWords, fold_count
from cubecl_server.ir import Elem
from cubecl_server.server import Binding


def _binding(elem: Elem, shape: tuple[int, ...]) -> Binding:
    return Binding(None, 0, math.prod(shape) * elem.bits // 8, elem, shape)


def test_words_are_asked_for_once_and_packed_in_order() -> None:
    w = InfoWords()
    assert w.word("scalar", 0, words=2) == 0  # an f64
    assert w.word("scalar", 1) == 2
    assert w.word("len", 0) == 3
    assert w.word("stride", 1, 0) == 4
    assert w.word("len", 0) == 3  # asked again: the same word
    assert w.word("shape", 1, 5) == 5  # past the rank
    assert w.word("count", 0, words=3) == 6
    layout = w.layout()
    assert layout.words == 9 == w.words
    a, b = _binding(Elem.F32, (7, 3)), _binding(Elem.I64, (4, 5, 6))
    out = np.full(12, 0xDEADBEEF, np.uint32)
    layout.pack(out, 2, CubeCount(70000, 2, 1), [a, b],
                [np.float64(-2.5), np.bool_(True)])
    want = [*np.frombuffer(np.float64(-2.5).tobytes(), np.uint32), 1, 21, 30, 1, 70000, 2, 1]
    assert out.tolist() == [0xDEADBEEF] * 2 + [int(v) for v in want] + [0xDEADBEEF]


def test_a_layout_round_trips_through_a_header_and_refuses_junk() -> None:
    layout = InfoLayout((InfoEntry("scalar", 0, 0, 2), InfoEntry("shape", 1, 2),
                         InfoEntry("count", 0, 0, 3)))
    assert InfoLayout.from_header(layout.to_header()) == layout
    for junk in ([["bogus", 0, 0, 1]], [["len", -1, 0, 1]], [["len", 0, 0, True]],
                 [["len", 0, 0]], 7):
        with pytest.raises((ValueError, TypeError)):
            InfoLayout.from_header(junk)


@pytest.mark.parametrize("count", [(5, 6, 7), (65535, 65535, 1), (65536, 1, 1),
                                   (200_000, 3, 1), (1, 70_000, 2), (4_000_000_000, 1, 1)])
def test_a_folded_count_covers_every_cube_within_the_limit(
        count: tuple[int, int, int]) -> None:
    limit = (65535, 65535, 65535)
    c = CubeCount(*count)
    gx, gy, gz = fold_count(c, limit)
    assert gx <= limit[0] and gy <= limit[1] and gz <= limit[2]
    assert gx * gy * gz >= c.total
    if all(n <= m for n, m in zip(count, limit, strict=True)):
        assert (gx, gy, gz) == count  # what fits is dispatched as asked
    else:
        # The surplus is less than one z-layer: every layer but the last is full.
        assert gx * gy * (gz - 1) < c.total


@pytest.mark.parametrize(("total", "exact"), [(65536, (32768, 2, 1)), (65535 * 7, (65535, 7, 1)),
                                              (1 << 24, (32768, 512, 1)),
                                              (3 * 5 * 7 * 11 * 13 * 17, None)])
def test_a_count_with_a_fitting_factor_folds_exactly(total: int,
                                                     exact: tuple[int, int, int] | None) -> None:
    gx, gy, gz = fold_count(CubeCount(total), (65535, 65535, 65535))
    assert gx * gy * gz == total and gz == 1 and gx <= 65535
    if exact is not None:
        assert (gx, gy, gz) == exact


def test_a_prime_count_folds_with_a_surplus() -> None:
    prime = 1_000_003  # past one x-row of the limit, no factor to fold it by
    gx, gy, gz = fold_count(CubeCount(prime), (65535, 65535, 65535))
    assert gx * gy * gz > prime and gx * (gy - 1) * gz < prime


def test_a_count_that_cannot_fold_is_refused() -> None:
    with pytest.raises(ValueError, match="more than a dispatch"):
        fold_count(CubeCount(100, 100, 100), (10, 10, 10))


def test_an_offset_word_is_where_a_binding_starts_in_elements() -> None:
    """A target binding whole resources reads a sub-allocation's or a view's start from
    its ``offset`` word, in elements of the array."""
    words = InfoWords()
    at = words.word("offset", 1)
    layout = InfoLayout.from_header(words.layout().to_header())
    arrays = [_binding(Elem.F32, (4,)), Binding(None, 768, 64, Elem.U16, (32,))]
    out = np.zeros(layout.words, np.uint32)
    layout.pack(out, 0, CubeCount(1), arrays, [])
    assert out[at] == 768 // 2
