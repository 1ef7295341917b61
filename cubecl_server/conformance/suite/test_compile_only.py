"""Compile-only checks: every kernel of the set goes through the backend's
ArtifactCompiler (lower, source, finalize) and the artifact is validated as far as
the host can. They run on every machine, with or without the device."""

from __future__ import annotations

import json

import pytest

from cubecl_server.client import ComputeClient
from cubecl_server.compiler import Artifact, CompilationRecording
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import kernel_needs, missing_capability
from cubecl_server.persistence.codec import decode_artifact, encode_artifact

pytestmark = [pytest.mark.usefixtures("cubecl_isolated"), pytest.mark.compile_only]


class TestCompileOnly:
    """Lower and finalize without launching."""

    @pytest.mark.parametrize("name", list(kernels.KERNEL_SET))
    def test_lower_and_finalize(self, cubecl_client: ComputeClient, name: str,
                                request: pytest.FixtureRequest) -> None:
        get, comptime, dim = kernels.KERNEL_SET[name]
        k = get()
        # What the kernel needs is read from its IR: a device that could never launch
        # it (no shared memory, no barriers...) skips, naming what it lacks.
        for need in kernel_needs(k.kernel_id(comptime).ir, dim):
            why = missing_capability(cubecl_client.capabilities, need)
            if why is not None:
                pytest.skip(f"backend {cubecl_client.backend!r} lacks capability: {why} "
                            f"(kernel {name})")
        aid = cubecl_client.artifact_id(k, dim, comptime)
        ac = cubecl_client.loader.artifact_compiler
        rec = CompilationRecording(True, aid.kernel.name, cubecl_client.backend, ac.variant)
        compiled = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode, rec)
        assert compiled.source.strip(), f"lowering {name} produced no source"
        assert compiled.name == aid.kernel.name, (
            f"lower named the CompiledKernel {compiled.name!r}, expected the IR kernel's "
            f"name {aid.kernel.name!r} (errors and records use it)")
        source = ac.source(compiled)
        assert source is None or isinstance(source, bytes), (
            f"ArtifactCompiler.source returned {type(source).__name__}, expected bytes or "
            "None")
        artifact = ac.finalize(compiled, rec)
        assert isinstance(artifact, Artifact), (
            f"finalize returned {type(artifact).__name__}, expected an Artifact")
        assert artifact.kind and isinstance(artifact.kind, str), (
            f"the artifact's kind is {artifact.kind!r}, expected a non-empty string")
        assert isinstance(artifact.payload, bytes) and artifact.payload, (
            f"the artifact's payload is {type(artifact.payload).__name__} of "
            f"{len(artifact.payload or b'')} bytes, expected non-empty bytes")
        try:
            json.dumps(artifact.header)  # the store keeps the header as JSON
        except (TypeError, ValueError) as e:
            pytest.fail(f"the artifact's header is not JSON ({e}): {artifact.header!r}")
        at = {"namespace": "conformance/compile-only", "key": aid.kernel.name}
        decoded = decode_artifact(
            encode_artifact(artifact.kind, artifact.header, artifact.payload, **at), **at)
        assert decoded.payload == artifact.payload and decoded.kind == artifact.kind, (
            "the artifact did not survive the store's envelope unchanged")
        problems = [p for p in request.config.hook.pytest_cubecl_validate_artifact(
            backend=cubecl_client.backend, artifact=artifact, compiled=compiled) if p]
        assert not problems, "the backend's validator rejected the artifact:\n" + "\n".join(
            problems)
