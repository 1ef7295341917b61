"""The c backend's own tests, beside the conformance suite: what the suite does not
pin down about this backend's choices, and the size of the package."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from cubecl_c.backend import CTarget

from cubecl_server.client import create_client
from cubecl_server.conformance import kernels
from cubecl_server.errors import ArtifactRejected
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
)

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

PACKAGE = Path(__file__).parent.parent / "cubecl_c"


@kernel
def reverse(a: Array[f32], out: Array[f32]) -> None:
    """Each cube reverses its 1024 elements through shared memory."""
    s = shared(f32, 1024)
    s[UNIT_POS] = a[ABSOLUTE_POS]
    sync_cube()
    out[ABSOLUTE_POS] = s[u32(1023) - UNIT_POS]


def test_a_barrier_over_1024_units() -> None:
    c = create_client("c")
    a, out = np.arange(3 * 1024, dtype=np.float32), c.empty(3 * 1024, np.float32)
    reverse.launch(c, CubeCount(3), CubeDim(1024), c.create(a), out)
    assert np.array_equal(c.read(out), a.reshape(3, 1024)[:, ::-1].ravel())


def test_a_library_is_loaded_only_with_the_sha256_of_its_bytes() -> None:
    c = create_client("c")
    aid = c.artifact_id(kernels.scale, CubeDim(64), {})
    ac = c.loader.artifact_compiler
    artifact = ac.finalize(ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode, None), None)
    CTarget(None).load(artifact)
    flipped = artifact.payload[:-1] + bytes([artifact.payload[-1] ^ 1])
    with pytest.raises(ArtifactRejected, match="SHA-256"):
        CTarget(None).load(dataclasses.replace(artifact, payload=flipped))


def test_the_package_is_at_most_200_lines() -> None:
    """Non-blank, non-comment lines, docstrings and C text included."""
    lines = [line for path in PACKAGE.glob("*.py") for line in path.read_text().splitlines()
             if line.strip() and not line.strip().startswith("#")]
    assert len(lines) <= 200, f"cubecl_c is {len(lines)} lines"
