"""Lines (``Array[Line[T]]``): each operation at line sizes 1, 2, 4 and 8 against NumPy,
on fresh random data with edge values and lengths that are not a multiple of the line;
checked mode per element (the last, partial line reads 0 past the end and drops its
stores there); unchecked mode refusing a partial line. A size the backend lacks is
skipped by its capability (``line:N``, ``Capabilities.line_sizes``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.conformance.suite.test_language import _trunc_div, _unchecked_client
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.errors import LaunchError
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
DIM = 32
SIZES = [pytest.param(n, id=f"line{n}", marks=[pytest.mark.requires(f"line:{n}")] * (n > 1))
         for n in (1, 2, 4, 8)]


def _type(elem: ir.Elem) -> Any:
    """``elem`` as a parameter named by it (skipped where the device lacks it)."""
    return pytest.param(elem, id=elem.value)


def _lines(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` as whole lines: (lines, size), the last one filled with zeros (checked
    mode reads 0 past the end)."""
    pad = -len(a) % size
    return np.concatenate([a, np.zeros(pad, a.dtype)]).reshape(-1, size)


def _flat(lines: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` elements of lines (what a buffer of ``n`` holds of them)."""
    return lines.reshape(-1)[:n]


class TestLineOperations:
    """Every operation on lines, per element, against NumPy."""

    @pytest.mark.parametrize("size", SIZES)
    @pytest.mark.parametrize("elem", [_type(E.F32), _type(E.F64)])
    def test_float_lines(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                         cubecl_seed: int, elem: ir.Elem, size: int) -> None:
        c, dt = cubecl_client, np.dtype(elem.numpy_name)
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1  # never whole lines of 2+
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        s = dt.type(cubecl_rng.uniform(-4, 4))
        nl = -(-n // size)
        outs = [c.empty(n, dt) for _ in range(3)] + [c.empty(nl, dt) for _ in range(5)]
        kernels.line_floats(elem).launch(
            c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a), c.create(b), s, *outs,
            line_size=size)
        arith, maths, chosen, sums, mins, maxs, dots, ends = (c.read(o) for o in outs)
        la, lb = _lines(a, size), _lines(b, size)
        where = f"at line size {size}, {n} {elem.value}"
        with np.errstate(all="ignore"):
            want = a * s + b - a / b - dt.type(1.5)
            check(arith, want, f"x * s + y - x / y - 1.5 {where}", cubecl_seed, elem=elem,
                  exact=False, inputs={"a": a, "b": b},
                  scale=np.abs(a * s) + np.abs(b) + np.abs(a / b))
            want = (np.sqrt(np.abs(a)) + np.floor(b)
                    + np.fmin(np.fmax(a, dt.type(-1)), dt.type(1)) * np.fmin(a, b))
            check(maths, want, f"sqrt(abs(x)) + floor(y) + clamp(x, -1, 1) * min(x, y) {where}",
                  cubecl_seed, elem=elem, exact=False, inputs={"a": a, "b": b},
                  scale=np.abs(b) + np.abs(np.fmin(a, b)) + 1)
            check(chosen, np.where(a < b, a, s), f"select(x < y, x, line(s, n)) {where}",
                  cubecl_seed, inputs={"a": a, "b": b})
            check(sums, la.sum(axis=1, dtype=dt), f"line_sum {where}", cubecl_seed, elem=elem,
                  exact=False, scale=np.abs(la).sum(axis=1))
            check(mins, np.fmin.reduce(la, axis=1), f"line_min {where}", cubecl_seed)
            check(maxs, np.fmax.reduce(la, axis=1), f"line_max {where}", cubecl_seed)
            check(dots, (la * lb).sum(axis=1, dtype=dt), f"dot {where}", cubecl_seed,
                  elem=elem, exact=False, scale=np.abs(la * lb).sum(axis=1))
            check(ends, la[:, 0] - la[:, -1], f"a[i][0] - a[i][line_size(a) - 1] {where}",
                  cubecl_seed)

    @pytest.mark.parametrize("size", SIZES)
    @pytest.mark.parametrize("elem", [_type(E.I32), _type(E.U32), _type(E.I64)])
    def test_integer_lines(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                           cubecl_seed: int, elem: ir.Elem, size: int) -> None:
        c, dt = cubecl_client, np.dtype(elem.numpy_name)
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        b[cubecl_rng.choice(n, 3, replace=False)] = 0  # division by zero gives 0
        s = dt.type(cubecl_rng.integers(0, 1000))
        nl = -(-n // size)
        outs = [c.empty(n, dt) for _ in range(4)] + [c.empty(n, np.float32)] + [
            c.empty(nl, dt) for _ in range(3)]
        kernels.line_ints(elem).launch(
            c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a), c.create(b), s, *outs,
            line_size=size)
        arith, divs, bits, chosen, floats, sums, mins, maxs = (c.read(o) for o in outs)
        la = _lines(a, size)
        where = f"at line size {size}, {n} {elem.value}"
        inputs = {"a": a, "b": b}
        with np.errstate(all="ignore"):
            check(arith, a * b + s - a, f"x * y + s - x (wrapping) {where}", cubecl_seed,
                  inputs=inputs)
            q = _trunc_div(a, b)
            check(divs, q + (a - q * b) * (b != 0),
                  f"x // y + x % y (C's, by zero 0) {where}", cubecl_seed, inputs=inputs)
            neg = (np.zeros_like(a) - a)
            check(bits, ((a & b) | (a >> dt.type(3))) ^ (~b + neg),
                  f"((x & y) | (x >> 3)) ^ (~y + -x) {where}", cubecl_seed, inputs=inputs)
            check(chosen, np.where(a > b, np.minimum(a, s), np.maximum(b, s)),
                  f"select(x > y, min(x, s), max(y, s)) {where}", cubecl_seed, inputs=inputs)
            check(floats, a.astype(np.float32), f"f32(x) of a line {where}", cubecl_seed,
                  inputs=inputs)
            check(sums, la.sum(axis=1, dtype=dt), f"line_sum (wrapping) {where}", cubecl_seed)
            check(mins, la.min(axis=1), f"line_min {where}", cubecl_seed)
            check(maxs, la.max(axis=1), f"line_max {where}", cubecl_seed)


class TestCheckedLines:
    """A buffer that is not whole lines: its last line is partial, per element."""

    @pytest.mark.parametrize("size", SIZES)
    def test_partial_line_reads_zero_past_the_end(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, size: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        a = values(cubecl_rng, E.F32, n)
        m = n + 2 * size + 3  # out is longer: past a's last line it keeps its values
        out = c.create(np.full(m, -7.0, np.float32))
        nl = -(-n // size)
        kernels.line_copy.launch(c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a), out,
                                 line_size=size)
        want = np.full(m, -7.0, np.float32)
        want[:nl * size] = _lines(a, size).reshape(-1)
        check(c.read(out), want, f"out[i] = a[i] over the {nl} lines of {n} f32 at line "
              f"size {size}: the last line of a reads 0 past its end", cubecl_seed)

    @pytest.mark.parametrize("size", SIZES)
    def test_partial_line_drops_stores_past_the_end(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, size: int) -> None:
        c = cubecl_client
        m = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        a = values(cubecl_rng, E.F32, m + 3 * size)
        out = c.create(np.full(m, -7.0, np.float32))
        after = c.create(np.full(4 * size, 5.0, np.float32))  # likely right after out
        nl = -(-len(a) // size)
        kernels.line_copy.launch(c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a), out,
                                 line_size=size)
        check(c.read(out), a[:m], f"out[i] = a[i] into a shorter out of {m} f32 at line "
              f"size {size}", cubecl_seed)
        check(c.read(after), np.full(4 * size, 5.0, np.float32),
              f"a buffer beside out, after stores past out's end at line size {size} "
              "(each is dropped)", cubecl_seed)

    @pytest.mark.parametrize("size", SIZES)
    def test_saxpy_at_every_size_matches_size_one(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, size: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        x, y = (values(cubecl_rng, E.F32, n, edges=False) for _ in range(2))
        out = c.empty(n, np.float32)
        alpha = np.float32(cubecl_rng.uniform(-3, 3))
        kernels.lines_saxpy.launch(c, cubes_for(-(-n // size), DIM), CubeDim(DIM),
                                   c.create(x), c.create(y), out, alpha, line_size=size)
        check(c.read(out), alpha * x + y, f"saxpy at line size {size}, {n} f32", cubecl_seed,
              elem=E.F32, exact=False, scale=np.abs(alpha * x) + np.abs(y))


    @pytest.mark.parametrize("size", SIZES)
    def test_lines_at_any_index(self, cubecl_client: ComputeClient,
                                cubecl_rng: np.random.Generator, cubecl_seed: int,
                                size: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        a = values(cubecl_rng, E.F32, n)
        nl = -(-n // size)
        # Line indices past a's last line too: each of their elements reads 0.
        idx = cubecl_rng.integers(0, nl + 2, nl).astype(np.uint32)
        out = c.empty(n, np.float32)
        for flip in (True, False):
            kernels.line_gather.launch(c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a),
                                       c.create(idx), out, flip, line_size=size)
            la = np.concatenate([_lines(a, size), np.zeros((2, size), np.float32)])
            want = _flat(la[idx][::-1] * (1 if flip else -1), n)
            check(c.read(out), want, f"out[len(out) - 1 - i] = select({flip}, a[j], -a[j]) "
                  f"at line size {size}, {n} f32", cubecl_seed, inputs={"out": want})


class TestLanes:
    """A line's lanes chosen at run time and set one at a time, its bits, and its
    buffer's length in lines."""

    @pytest.mark.parametrize("size", SIZES)
    def test_lane_read_and_set_at_run_time(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, size: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM * size) // 2 * 2 + 1
        a = values(cubecl_rng, E.F32, n)
        nl = -(-n // size)
        k = cubecl_rng.integers(0, size + 2, nl).astype(np.uint32)  # some past the line
        outs = (c.empty(nl, np.float32), c.empty(n, np.float32), c.empty(n, np.uint32),
                c.empty(1, np.uint32))
        kernels.line_lanes.launch(c, cubes_for(nl, DIM), CubeDim(DIM), c.create(a),
                                  c.create(k), *outs, line_size=size)
        picked, put, bits, count = (c.read(o) for o in outs)
        la, rows = _lines(a, size), np.arange(nl)
        inside = k < size
        lane = np.minimum(k, size - 1)
        where = f"at line size {size}, {n} f32"
        check(picked, np.where(inside, la[rows, lane], np.float32(0)),
              f"v[j] with j chosen at run time (0 past the line) {where}", cubecl_seed,
              inputs={"a": a, "k": k})
        w = la.copy()
        w[:, 0] = 9.5
        w[rows[inside], k[inside]] = -la[rows[inside], k[inside]]
        w[rows, k % size] += np.float32(1)
        check(put, _flat(w, n), f"w[0] = 9.5; w[j] = -v[j]; w[j % n] += 1 {where}",
              cubecl_seed, inputs={"a": a, "k": k})
        check(bits, _flat(la.view(np.uint32), n), f"bitcast(v, u32) of a line {where}",
              cubecl_seed, inputs={"a": a})
        check(count, np.array([nl], np.uint32), f"buffer_len of a line array {where}",
              cubecl_seed)


class TestPlaneLines:
    """Plane operations on lines: each lane across the plane on its own."""

    @pytest.mark.requires("plane")
    @pytest.mark.parametrize("size", SIZES)
    def test_plane_operations_per_lane(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, size: int) -> None:
        c = cubecl_client
        plane = c.capabilities.plane_size
        assert plane is not None, "the plane marker let a backend without planes through"
        nl = DIM * 3  # whole cubes: every unit has a line and every plane is full
        v = cubecl_rng.integers(-8, 9, nl * size).astype(np.float32)  # exact sums
        outs = [c.empty(nl * size, np.float32) for _ in range(5)] + [
            c.empty(nl * size, np.uint32)]
        kernels.plane_lines.launch(c, 3, DIM, c.create(v), *outs, line_size=size)
        got = [c.read(o).reshape(nl, size) for o in outs]
        lv = v.reshape(nl, size)
        unit = np.arange(nl)
        start = unit - unit % plane  # DIM is a multiple of every plane size here
        lane = unit % plane
        groups = lv.reshape(nl // plane, plane, size)
        below = np.where(lane + lane % 2 + 1 < plane, unit + lane % 2 + 1, unit)
        want = [np.repeat(groups.sum(axis=1), plane, axis=0),
                np.repeat(groups.max(axis=1), plane, axis=0), lv[start], lv[unit ^ 1],
                lv[below], np.repeat((groups > 2).any(axis=1), plane, axis=0)]
        names = ("plane_sum", "plane_max", "plane_broadcast(x, 0)", "plane_shuffle_xor(x, 1)",
                 "plane_shuffle_down(x, lane % 2 + 1)", "plane_any(x > 2)")
        # A shuffle_xor partner outside the plane (planes of one unit) has no value.
        keep = [np.ones(nl, bool)] * 3 + [(unit ^ 1) // plane == unit // plane] + [
            np.ones(nl, bool)] * 2
        for g, w, name, k in zip(got, want, names, keep, strict=True):
            check(g[k].reshape(-1), w[k].astype(g.dtype).reshape(-1),
                  f"{name} of lines of {size} (plane size {plane})", cubecl_seed,
                  inputs={"v": v})


class TestUncheckedLines:
    """Unchecked mode has no partial lines: the launch refuses one."""

    @pytest.mark.requires("line:4")
    def test_partial_line_is_refused_whole_lines_run(
            self, cubecl_subject: Subject, monkeypatch: pytest.MonkeyPatch,
            cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = _unchecked_client(cubecl_subject, monkeypatch)
        n = 4 * DIM * 3
        x, y = (values(cubecl_rng, E.F32, n, edges=False) for _ in range(2))
        out = c.empty(n, np.float32)
        short = c.create(x[:n - 1])
        with pytest.raises(LaunchError, match=r"'x'.*whole number of lines of 4"):
            kernels.lines_saxpy.launch(c, 3, DIM, short, c.create(y), out, np.float32(2),
                                       line_size={"x": 4, "y": 4, "out": 4})
        kernels.lines_saxpy.launch(c, 3, DIM, c.create(x), c.create(y), out, np.float32(2),
                                   line_size=4)
        check(c.read(out), np.float32(2) * x + y, "unchecked saxpy over whole lines of 4",
              cubecl_seed, elem=E.F32, exact=False, scale=np.abs(2 * x) + np.abs(y))
