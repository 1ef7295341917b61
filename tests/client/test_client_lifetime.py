"""A client's lifetime: ``close()`` and ``with``, what a closed client answers, its
memory given back, and the process's shared client made anew."""

from __future__ import annotations

import numpy as np
import pytest

import cubecl_server
from cubecl_server import errors
from cubecl_server.client import create_client
from cubecl_server.conformance import kernels
from cubecl_server.kernel import CubeCount, CubeDim


def test_close_frees_memory_and_refuses_every_call() -> None:
    c = create_client("cpu")
    a = c.create(np.arange(1000, dtype=np.float32))
    out = c.empty(1000, np.float32)
    kernels.scale.launch(c, CubeCount(4), CubeDim(256), a, out, 2.0)
    assert c.memory.usage().bytes_reserved > 0
    c.close()
    assert c.memory.usage().bytes_reserved == 0, "a closed client kept its memory"
    calls = {
        "read": lambda: c.read(out),
        "create": lambda: c.create(np.zeros(3, np.float32)),
        "empty": lambda: c.empty(3, np.float32),
        "launch": lambda: kernels.scale.launch(c, CubeCount(4), CubeDim(256), a, out, 2.0),
        "sync": c.sync,
        "prepare": lambda: c.prepare(kernels.scale, CubeDim(256)),
        "fill": lambda: c.fill(out, 0.0),
    }
    for name, call in calls.items():
        with pytest.raises(errors.ClientClosedError, match="closed"):
            call()
            pytest.fail(f"{name} on a closed client did not raise")
    c.close()  # again: nothing


def test_with_block_closes_and_the_shared_client_is_made_anew() -> None:
    first = cubecl_server.client("cpu")
    with cubecl_server.client("cpu") as c:
        assert c is first
        h = c.create(np.ones(4, np.float32))
        assert np.array_equal(c.read(h), np.ones(4, np.float32))
    with pytest.raises(errors.ClientClosedError):
        c.read(h)
    again = cubecl_server.client("cpu")
    assert again is not first, "the shared client was not made anew after its close"
    assert np.array_equal(again.read(again.create(np.arange(3))), np.arange(3))


def test_close_reports_what_the_work_left_unread_then_closes() -> None:
    c = create_client("cpu")
    out = np.full(8, 5.0, np.float32)
    kernels.uncompilable("fails_on_purpose").launch(c, CubeCount(1), CubeDim(8),
                                                    np.ones(8, np.float32), out)
    with pytest.raises(errors.TaintedBufferError, match="fails_on_purpose"):
        c.close()
    with pytest.raises(errors.ClientClosedError):
        c.sync()
