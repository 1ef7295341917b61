"""The ``vulkan`` backend's two compiler halves: the lowered module to an artifact,
and SPIR-V to a pipeline.

The artifact (kind ``spirv.2``: modules this backend writes itself; ``spirv``
artifacts, which glslang built in earlier releases, are rejected and compiled again)
is the SPIR-V module's bytes; its header is the
:class:`~cubecl_vulkan.compiler.ShaderLayout` (entry point, work-group size, the
array bindings and the metadata words) plus the kernel's name and what wrote the
module (:data:`EMITTER`). Lowering writes the module; finalizing only wraps it, or,
with ``CUBECL_VULKAN_VALIDATE=1``, runs ``spirv-val`` on it first (the test suites do:
:mod:`cubecl_vulkan.conformance`).

Pipeline-cache data is the driver's data of the store's
:class:`~cubecl_server.backend.features.DriverCache` (``store.driver_cache``), kept beside the
artifact by a hash of it: load seeds a ``VkPipelineCache`` with what a previous
process kept, and hands back the cache's data after creating the pipeline, which is
stored when it differs (the first load, or one that added to it). The variant holds
``pipelineCacheUUID``, so the data is never handed to a driver that cannot use it;
data the driver refuses is purged and the pipeline built without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from cubecl_server.backend import Artifact, CompilationError, CompiledKernel, Compiler
from cubecl_server.backend.compiling import (
    ArtifactStore,
    CompilationRecording,
    LoweringArtifactCompiler,
)
from cubecl_server.backend.support import ArtifactRejected, DriverError
from cubecl_vulkan import STORE_NAMES
from cubecl_vulkan.compiler import LoweredModule, ShaderLayout, VulkanCompiler
from cubecl_vulkan.device import BACKEND, PhysicalDevice
from cubecl_vulkan.pipeline import LoadedKernel, build_pipeline, spirv_problem
from cubecl_vulkan.server import VulkanServer
from cubecl_vulkan.spirv import TARGET_ENV

__all__ = ["KIND", "EMITTER", "ENV_VALIDATE", "STORE_NAMES", "VulkanArtifactCompiler",
           "VulkanTarget", "validate"]

KIND = "spirv.2"
EMITTER = "cubecl-vulkan spirv emitter 2"
"""What wrote a module lowered to SPIR-V directly (part of its source key)."""
ENV_VALIDATE = "CUBECL_VULKAN_VALIDATE"
"""Set to ``1``: every module finalize wraps is checked by ``spirv-val`` first."""

def _lowered(compiled: CompiledKernel) -> LoweredModule:
    if not isinstance(compiled.repr, LoweredModule):
        raise CompilationError("the lowered kernel carries no SPIR-V module (a Compiler "
                               "that is not VulkanCompiler?)", kernel=compiled.name,
                               backend=BACKEND)
    return compiled.repr


def validate(spirv: bytes) -> str | None:
    """What ``spirv-val`` (Vulkan 1.1 rules) says is wrong with a module, or None;
    FileNotFoundError without it (Debian's ``spirv-tools``)."""
    exe = shutil.which("spirv-val")
    if exe is None:
        raise FileNotFoundError("spirv-val not found: install spirv-tools")
    with tempfile.TemporaryDirectory(prefix="cubecl-vk-") as tmp:
        path = Path(tmp) / "kernel.spv"
        path.write_bytes(spirv)
        run = subprocess.run([exe, "--target-env", TARGET_ENV, str(path)],
                             capture_output=True, text=True, check=False)
    return None if run.returncode == 0 else (run.stdout + run.stderr).strip()


class VulkanArtifactCompiler(LoweringArtifactCompiler):
    """Lowers IR to SPIR-V for this device's features, and finalizes the module into
    an artifact.

    The variant is the device's: UUID, pipelineCacheUUID, driver version and name.
    """

    def __init__(self, compiler: Compiler, physical: PhysicalDevice) -> None:
        super().__init__(compiler.for_device(physical.features)
                         if isinstance(compiler, VulkanCompiler) else compiler,
                         physical.variant)

    def source(self, compiled: CompiledKernel) -> bytes | None:
        """The module, its layout and what wrote it: all finalize sees."""
        lowered = _lowered(compiled)
        layout = json.dumps(lowered.layout.to_header(), sort_keys=True)
        return lowered.spirv + f"\n{layout}\n{EMITTER}".encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """The module as an artifact; checked by spirv-val first with
        ``CUBECL_VULKAN_VALIDATE=1`` (CompilationError with its log)."""
        lowered = _lowered(compiled)
        if os.environ.get(ENV_VALIDATE) == "1":
            try:
                problem = validate(lowered.spirv)
            except FileNotFoundError as e:
                raise CompilationError(f"{ENV_VALIDATE}=1, but {e}", kernel=compiled.name,
                                       backend=BACKEND) from e
            if problem is not None:
                raise CompilationError(f"spirv-val rejected the module: {problem}",
                                       kernel=compiled.name, backend=BACKEND, log=problem)
        recording.add("artifact", 0.0, len(lowered.spirv))
        return Artifact(KIND, lowered.spirv, {**lowered.layout.to_header(),
                                              "kernel": compiled.name, "emitter": EMITTER})


class VulkanTarget:
    """Loads SPIR-V as compute pipelines on one server's device; its store is the one
    the core opened for the device's variant."""

    def __init__(self, server: VulkanServer, store: ArtifactStore | None) -> None:
        self.server = server
        self.store = store

    def load(self, artifact: Artifact) -> LoadedKernel:
        """Create the artifact's pipeline, seeded with stored pipeline-cache data.

        Raises ArtifactRejected for something that is not our SPIR-V, or that the
        driver refuses.
        """
        if artifact.kind != KIND:
            raise ArtifactRejected(f"not a SPIR-V artifact (kind {artifact.kind!r})")
        try:
            layout = ShaderLayout.from_header(artifact.header)
        except (KeyError, ValueError, TypeError) as e:
            raise ArtifactRejected(f"SPIR-V artifact header is malformed: {e!r}") from e
        problem = spirv_problem(artifact.payload)
        if problem is not None:
            raise ArtifactRejected(problem)
        name = str(artifact.header.get("kernel", "kernel"))
        caches = self.store.driver_cache if self.store is not None else None
        initial = caches.get(artifact) if caches is not None else None
        device = self.server.vkdevice
        try:
            loaded = build_pipeline(device, name, artifact.payload, layout, initial)
        except DriverError as e:
            if initial is None or caches is None:
                raise ArtifactRejected(str(e)) from e
            # The stored cache data may be what the driver chokes on: drop it, retry.
            caches.purge(artifact)
            try:
                loaded = build_pipeline(device, name, artifact.payload, layout, None)
            except DriverError as e2:
                raise ArtifactRejected(str(e2)) from e2
        if caches is not None and loaded.cache_data != initial:
            caches.update(artifact, loaded.cache_data)  # the first load, or one that added
        self.server.kernels.append(loaded)
        return loaded
