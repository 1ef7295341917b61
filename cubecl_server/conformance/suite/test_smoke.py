"""The smoke test: the trivial kernel compiles and, where there is a device, runs.

The plugin runs this module first. When it fails, the backend is broken at the root
(its client, its lowering, its finalize or its launch), every other test would fail
for the same reason, and the plugin skips them with a line that points here.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.kernel import CubeCount, CubeDim

pytestmark = [pytest.mark.usefixtures("cubecl_isolated"), pytest.mark.compile_only]

N = 100
DIM = 64


def test_the_trivial_kernel_compiles_and_runs(cubecl_subject: Subject) -> None:
    from cubecl_server.client import create_client

    backend = cubecl_subject.backend
    try:
        caps = cubecl_subject.capabilities
        c = create_client(backend, cubecl_subject.device, compile_only=not caps.device_present)
    except Exception as e:
        pytest.fail(f"backend {backend!r}: creating a client raised {type(e).__name__}: "
                    f"{e}", pytrace=False)
    try:
        c.prepare(kernels.scale, CubeDim(DIM))
    except Exception as e:
        pytest.fail(f"backend {backend!r} cannot compile the trivial kernel `scale` "
                    f"(out[i] = a[i] * k): {type(e).__name__}: {e}", pytrace=False)
    if not caps.device_present:
        return
    data = np.arange(N, dtype=np.float32)
    a, out = c.create(data), c.empty(N, np.float32)
    kernels.scale.launch(c, CubeCount(-(-N // DIM)), CubeDim(DIM), a, out, 3.0)
    try:
        got = c.read(out)
    except Exception as e:
        pytest.fail(f"backend {backend!r}: launching the trivial kernel `scale` failed: "
                    f"{type(e).__name__}: {e}", pytrace=False)
    want = data * np.float32(3.0)
    wrong = np.flatnonzero(got != want)
    assert wrong.size == 0, (
        f"backend {backend!r}: the trivial kernel `scale` (out[i] = a[i] * 3 over {N} "
        f"elements) computed {got[wrong[:5]].tolist()} at {wrong[:5].tolist()}, expected "
        f"{want[wrong[:5]].tolist()}")
