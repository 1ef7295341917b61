"""The caller's NumPy arrays used in place on the cpu backend (``cubecl_server.arrays``):
the kernel writes the array itself, no copy is made; the copy path's bookkeeping (one
buffer per array until delivery) through a server that does not share host memory."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.arrays import HostMemoryServer, UserArrays
from cubecl_server.client import create_client
from cubecl_server.conformance import kernels
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import Handle

ADD = kernels.binary("add", ir.Elem.F32)


def test_cpu_writes_the_callers_array_in_place() -> None:
    c = create_client("cpu")
    rng = np.random.default_rng(7)
    n = 1000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    address = out.ctypes.data
    assert isinstance(c.server, HostMemoryServer)
    ADD.launch(c, CubeCount(4), CubeDim(256), a, b, out)
    # The cpu server runs a launch at once, in the array's own memory: the result is
    # there before any sync, and nothing was copied in or out.
    assert np.array_equal(out, a + b)
    assert out.ctypes.data == address
    c.sync()
    stats = c.stats()
    assert (stats.bytes_written, stats.bytes_read) == (0, 0), stats


class _Memoryless:
    """A server that shares no memory with the host (the copy path)."""


def test_copy_path_keeps_one_buffer_per_array_until_delivery() -> None:
    made: list[np.ndarray] = []

    def create(arr: np.ndarray) -> Handle:
        made.append(arr)
        return create_client("cpu").create(arr)

    users = UserArrays(create_client("cpu").memory, _Memoryless(), create)
    p = ir.Param("out", ir.Elem.F32, True)
    arr = np.zeros(8, np.float32)
    first = users.bind("k", p, arr, written=True)
    assert users.bind("k", p, arr, written=False) is first, "a second launch copied again"
    assert len(made) == 1
    written = np.arange(8, dtype=np.float32)
    users.deliver(lambda h: written, lambda what, t: AssertionError(what))
    assert np.array_equal(arr, written), "the written buffer was not copied back"
    users.deliver(lambda h: pytest.fail("delivered twice"), lambda what, t: AssertionError())


def test_dlpack_of_a_cpu_buffer_shares_its_memory() -> None:
    c = create_client("cpu")
    h = c.create(np.arange(12, dtype=np.float32))
    seen = np.from_dlpack(h)
    assert np.array_equal(seen, np.arange(12, dtype=np.float32))
    seen[3] = -1.0  # the buffer itself, not a copy
    assert c.read(h)[3] == -1.0
    ADD.launch(c, CubeCount(1), CubeDim(16), h, h, h)
    assert np.array_equal(np.from_dlpack(h)[:4], np.array([0, 2, 4, -2], np.float32)), (
        "the export does not see the launch before it")
    v = c.view(h, (2, 3), strides=(1, 4), offset=1)
    flat = c.read(h)
    want = np.array([[flat[1 + i + 4 * j] for j in range(3)] for i in range(2)])
    assert np.array_equal(np.from_dlpack(v), want), "a view's export does not follow its strides"
    into = np.empty(12, np.float32)
    assert c.read(h, out=into) is into and np.array_equal(into, c.read(h))
    h.free()
    with pytest.raises(ValueError, match="freed"):
        np.from_dlpack(h)


def test_dlpack_of_a_tainted_buffer_raises() -> None:
    from cubecl_server.errors import TaintedBufferError

    c = create_client("cpu")
    out = c.empty(8, np.float32)
    kernels.uncompilable("fails_on_purpose").launch(c, CubeCount(1), CubeDim(8),
                                                    c.create(np.ones(8, np.float32)), out)
    with pytest.raises(TaintedBufferError, match="fails_on_purpose"):
        np.from_dlpack(out)
