"""End-to-end kernels of the full language on the ``cpu`` backend, against NumPy.

Each kernel runs on fresh random data whose size does not divide the cube dim, so
the bounds checks and partial cubes are exercised. These are the kernels issue 4
names: a shared-memory tree reduction, a tiled matrix product (16x16 tiles), a
histogram with atomics, a two-pass softmax, an inclusive scan within a cube, a
comptime-unrolled loop and plane sums.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    TypeRef,
    atomic_add,
    atomic_compare_exchange,
    atomic_max,
    cube_fn,
    dtype,
    exp,
    f32,
    i32,
    kernel,
    plane_broadcast,
    plane_max,
    plane_sum,
    shared,
    sync_cube,
    u32,
)


@pytest.fixture(scope="module")
def client() -> ComputeClient:
    return create_client("cpu")


@pytest.fixture
def rng() -> np.random.Generator:
    # Fresh data every run: the seed is drawn, and shown when a test fails.
    seed = int(np.random.SeedSequence().entropy % (2**32))
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def cubes(n: int, dim: int) -> CubeCount:
    return CubeCount((n + dim - 1) // dim)


# ---------------------------------------------------------------- reduction

BLOCK = 64


@kernel
def tree_sum(x: Array[f32], partial: Array[f32]) -> None:
    """Each cube sums BLOCK elements through shared memory, halving the active units."""
    tile = shared(f32, BLOCK)
    u = UNIT_POS
    i = ABSOLUTE_POS
    # Not `x[i] if ... else 0.0`: a select evaluates both sides, out of bounds here.
    v = 0.0
    if i < len(x):
        v = x[i]
    tile[u] = v
    sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if u < stride:
            tile[u] += tile[u + stride]
        sync_cube()
        stride = stride // 2
    if u == 0:
        partial[CUBE_POS] = tile[0]


def test_shared_memory_tree_reduction(client: ComputeClient, rng: np.random.Generator) -> None:
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    count = cubes(n, BLOCK)
    hx, hp = client.create(x), client.empty(count.x, np.float32)
    tree_sum.launch(client, count, CubeDim(BLOCK), hx, hp)
    got = client.read(hp)
    want = np.array([x[k:k + BLOCK].sum(dtype=np.float64) for k in range(0, n, BLOCK)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- matmul

TILE = 16


@cube_fn
def load_tile(src: Array[f32], dst: object, row: u32, col: u32, rows: u32, cols: u32) -> None:
    """dst[UNIT_POS] = src[row, col] of a rows x cols row-major matrix, 0 outside."""
    v = 0.0
    if row < rows and col < cols:
        v = src[row * cols + col]
    dst[UNIT_POS_Y * TILE + UNIT_POS_X] = v


@kernel
def matmul(a: Array[f32], b: Array[f32], c: Array[f32], m: u32, k: u32, n: u32) -> None:
    """c = a @ b with TILE x TILE tiles of both operands in shared memory."""
    ta = shared(f32, TILE * TILE)
    tb = shared(f32, TILE * TILE)
    row = ABSOLUTE_POS_Y
    col = ABSOLUTE_POS_X
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    acc = 0.0
    for t in range(u32(0), (k + TILE - 1) // TILE):
        load_tile(a, ta, row, t * TILE + tx, m, k)
        load_tile(b, tb, t * TILE + ty, col, k, n)
        sync_cube()
        for j in range(u32(TILE), unroll=True):
            acc += ta[ty * TILE + j] * tb[j * TILE + tx]
        sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


def test_tiled_matrix_product(client: ComputeClient, rng: np.random.Generator) -> None:
    m, k, n = 37, 45, 29
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ha, hb, hc = client.create(a), client.create(b), client.empty((m, n), np.float32)
    count = CubeCount((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    matmul.launch(client, count, CubeDim(TILE, TILE), ha, hb, hc, m, k, n)
    np.testing.assert_allclose(client.read(hc), a @ b, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- histogram


HIST_DIM = 128


@kernel
def histogram(x: Array[u32], hist: Array[u32], *, BINS: Comptime[int]) -> None:
    """Per-cube histogram in shared memory, merged into the global one with atomics."""
    local = shared(u32, BINS)
    u = UNIT_POS
    for b in range(u, u32(BINS), HIST_DIM):
        local[b] = 0
    sync_cube()
    i = ABSOLUTE_POS
    if i < len(x):
        atomic_add(local, x[i] % BINS, 1)
    sync_cube()
    for b in range(u, u32(BINS), HIST_DIM):
        atomic_add(hist, b, local[b])


@kernel
def global_histogram(x: Array[i32], hist: Array[i32], first: Array[i32]) -> None:
    """Atomics straight on global memory; the old value tells each bin's first writer."""
    i = ABSOLUTE_POS
    if i < len(x):
        old = atomic_add(hist, x[i], 1)
        if old == 0:
            atomic_max(first, x[i], i32(i))


def test_histogram_with_atomics(client: ComputeClient, rng: np.random.Generator) -> None:
    n, bins = 3001, 37
    x = rng.integers(0, 1000, n).astype(np.uint32)
    hx, hh = client.create(x), client.create(np.zeros(bins, np.uint32))
    histogram.launch(client, cubes(n, HIST_DIM), CubeDim(HIST_DIM), hx, hh, BINS=bins)
    np.testing.assert_array_equal(client.read(hh), np.bincount(x % bins, minlength=bins))


def test_global_atomics_return_the_old_value(client: ComputeClient,
                                             rng: np.random.Generator) -> None:
    n, bins = 999, 10
    x = rng.integers(0, bins, n).astype(np.int32)
    hx = client.create(x)
    hh = client.create(np.zeros(bins, np.int32))
    hf = client.create(np.full(bins, -1, np.int32))
    global_histogram.launch(client, cubes(n, 64), CubeDim(64), hx, hh, hf)
    np.testing.assert_array_equal(client.read(hh), np.bincount(x, minlength=bins))
    first = client.read(hf)
    for b in range(bins):
        # Exactly one unit saw 0 in its bin; it is one of the units holding b.
        assert (first[b] == -1) == (b not in x)
        if b in x:
            assert x[first[b]] == b


@kernel
def cas_lock_free_max(x: Array[i32], out: Array[i32]) -> None:
    """Compare-exchange loop: out[0] = max(x), the classic CAS retry pattern."""
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        cur = out[0]
        while cur < v:
            seen = atomic_compare_exchange(out, 0, cur, v)
            if seen == cur:
                break
            cur = seen


def test_compare_exchange_loop(client: ComputeClient, rng: np.random.Generator) -> None:
    x = rng.integers(-1000, 1000, 517).astype(np.int32)
    hx, ho = client.create(x), client.create(np.array([-5000], np.int32))
    cas_lock_free_max.launch(client, cubes(517, 32), CubeDim(32), hx, ho)
    assert client.read(ho)[0] == x.max()


# ---------------------------------------------------------------- softmax

ROW_DIM = 32


@cube_fn
def cube_reduce(tile: object, op_max: bool) -> f32:
    """Reduce ROW_DIM values of a shared tile (max or sum); every unit gets the result."""
    stride = u32(ROW_DIM // 2)
    while stride > 0:
        if UNIT_POS < stride:
            if op_max:
                tile[UNIT_POS] = max(tile[UNIT_POS], tile[UNIT_POS + stride])
            else:
                tile[UNIT_POS] += tile[UNIT_POS + stride]
        sync_cube()
        stride = stride // 2
    return tile[0]


@kernel
def softmax(x: Array[f32], y: Array[f32], cols: u32) -> None:
    """One cube per row: pass 1 finds the row max, pass 2 the sum of exponentials."""
    red = shared(f32, ROW_DIM)
    row = CUBE_POS
    base = row * cols
    m = -3.0e38
    for c in range(UNIT_POS, cols, ROW_DIM):
        m = max(m, x[base + c])
    red[UNIT_POS] = m
    sync_cube()
    row_max = cube_reduce(red, True)
    sync_cube()
    s = 0.0
    for c in range(UNIT_POS, cols, ROW_DIM):
        s += exp(x[base + c] - row_max)
    red[UNIT_POS] = s
    sync_cube()
    total = cube_reduce(red, False)
    for c in range(UNIT_POS, cols, ROW_DIM):
        y[base + c] = exp(x[base + c] - row_max) / total


def test_two_pass_softmax(client: ComputeClient, rng: np.random.Generator) -> None:
    rows, cols = 7, 101
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    hx, hy = client.create(x), client.empty((rows, cols), np.float32)
    softmax.launch(client, CubeCount(rows), CubeDim(ROW_DIM), hx, hy, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(client.read(hy), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- scan

SCAN = 128


@kernel
def inclusive_scan(x: Array[i32], y: Array[i32]) -> None:
    """Hillis-Steele inclusive scan of each cube's SCAN elements (double-buffered)."""
    a = shared(i32, SCAN)
    b = shared(i32, SCAN)
    u = UNIT_POS
    i = ABSOLUTE_POS
    v = 0
    if i < len(x):
        v = x[i]
    a[u] = v
    sync_cube()
    offset = u32(1)
    src_is_a = True
    while offset < SCAN:
        if src_is_a:
            w = a[u]
            if u >= offset:
                w += a[u - offset]
            b[u] = w
        else:
            w = b[u]
            if u >= offset:
                w += b[u - offset]
            a[u] = w
        sync_cube()
        src_is_a = not src_is_a
        offset = offset * 2
    if i < len(y):
        y[i] = a[u] if src_is_a else b[u]


def test_inclusive_scan_within_a_cube(client: ComputeClient, rng: np.random.Generator) -> None:
    n = 700
    x = rng.integers(-50, 50, n).astype(np.int32)
    hx, hy = client.create(x), client.empty(n, np.int32)
    inclusive_scan.launch(client, cubes(n, SCAN), CubeDim(SCAN), hx, hy)
    want = np.concatenate([np.cumsum(x[k:k + SCAN]) for k in range(0, n, SCAN)])
    np.testing.assert_array_equal(client.read(hy), want.astype(np.int32))


# ---------------------------------------------------------------- comptime


T = TypeRef("T")  # lets `Array[T]` name the comptime dtype T below, lint-clean


@kernel
def poly(x: Array[T], y: Array[T], *, DEGREE: Comptime[int], T: Comptime[dtype],
         SQUARE: Comptime[bool] = False) -> None:
    """y = sum_{d<=DEGREE} x**d / (d+1), the loop unrolled at compile time."""
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        acc = T(0)
        p = T(1)
        for d in range(DEGREE + 1, unroll=True):
            acc += p / T(d + 1)
            p *= v
        if SQUARE:
            acc = acc * acc
        y[i] = acc


@pytest.mark.parametrize(("np_type", "degree", "square"),
                         [(np.float32, 3, False), (np.float64, 5, True)])
def test_comptime_unrolled_loop(client: ComputeClient, rng: np.random.Generator,
                                np_type: type, degree: int, square: bool) -> None:
    n = 333
    x = rng.uniform(-1, 1, n).astype(np_type)
    hx, hy = client.create(x), client.empty(n, np_type)
    t = f32 if np_type is np.float32 else np.float64
    poly.launch(client, cubes(n, 64), CubeDim(64), hx, hy, DEGREE=degree, T=t,
                SQUARE=square)
    want = sum(x.astype(np.float64) ** d / (d + 1) for d in range(degree + 1))
    if square:
        want = want * want
    np.testing.assert_allclose(client.read(hy), want, rtol=1e-5)


# ---------------------------------------------------------------- planes


@kernel
def plane_stats(x: Array[f32], sums: Array[f32], maxes: Array[f32], firsts: Array[f32],
                dims: Array[u32]) -> None:
    """Per plane: the sum and max of its values and its first unit's value."""
    i = ABSOLUTE_POS
    v = 0.0
    if i < len(x):
        v = x[i]
    s = plane_sum(v)
    m = plane_max(v)
    f = plane_broadcast(v, 0)
    if i < len(x):
        sums[i] = s
        maxes[i] = m
        firsts[i] = f
        dims[i] = PLANE_DIM * 1000 + UNIT_POS_PLANE


def test_plane_sums(client: ComputeClient, rng: np.random.Generator) -> None:
    n, dim = 250, 96
    x = rng.standard_normal(n).astype(np.float32)
    hs, hm, hf = (client.empty(n, np.float32) for _ in range(3))
    hd = client.empty(n, np.uint32)
    plane_stats.launch(client, cubes(n, dim), CubeDim(dim), client.create(x), hs, hm, hf, hd)
    dims = client.read(hd)
    plane = int(dims[0] // 1000)
    assert plane >= 1 and dim % plane == 0
    np.testing.assert_array_equal(dims % 1000, np.arange(n) % dim % plane)
    # Units past the end of x still take part with 0.0: planes are whole.
    padded = np.zeros(cubes(n, dim).x * dim, np.float32)
    padded[:n] = x
    groups = padded.reshape(-1, plane)
    sums = np.repeat(groups.sum(axis=1, dtype=np.float64), plane)[:n]
    np.testing.assert_allclose(client.read(hs), sums, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(client.read(hm), np.repeat(groups.max(axis=1), plane)[:n])
    np.testing.assert_array_equal(client.read(hf), np.repeat(groups[:, 0], plane)[:n])


# ---------------------------------------------------------------- 2-D


@kernel
def transpose(a: Array[f32], out: Array[f32]) -> None:
    """out = a.T for a 2-D a, indexing with shapes and strides (2-D grid)."""
    r = CUBE_POS_Y * 8 + UNIT_POS_Y
    c = CUBE_POS_X * 8 + UNIT_POS_X
    if r < a.shape[0] and c < a.shape[1]:
        out[c * out.stride[0] + r * out.stride[1]] = a[r * a.stride[0] + c * a.stride[1]]


def test_two_dimensional_launch_with_shapes_and_strides(client: ComputeClient,
                                                         rng: np.random.Generator) -> None:
    a = rng.standard_normal((19, 27)).astype(np.float32)
    ha, ho = client.create(a), client.empty((27, 19), np.float32)
    transpose.launch(client, CubeCount(4, 3), CubeDim(8, 8), ha, ho)
    np.testing.assert_array_equal(client.read(ho), a.T)
