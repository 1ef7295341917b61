"""The example backend's test configuration: what the conformance suite may expect."""

from __future__ import annotations

import marshal

import pytest

from cubecl_server.compiler import Artifact
from cubecl_server.kernel import CompiledKernel


def pytest_cubecl_expected_failures(config: pytest.Config, backend: str) -> dict[str, str]:
    """Tests of the suite this backend is known to fail, with why (none)."""
    return {}


def pytest_cubecl_validate_artifact(backend: str, artifact: Artifact,
                                    compiled: CompiledKernel) -> str | None:
    """Check that a finalized artifact holds a code object."""
    try:
        marshal.loads(artifact.payload)
    except (ValueError, EOFError, TypeError) as e:
        return f"{compiled.name}: payload is not marshal data ({e})"
    return None
