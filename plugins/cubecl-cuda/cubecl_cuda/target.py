"""Loading a cuda artifact on a device: a module from its cubin, or from its PTX where
the driver refuses the cubin."""

from __future__ import annotations

from cubecl_cuda.artifact import LoadedCudaKernel, split_payload
from cubecl_cuda.compiler import Param
from cubecl_cuda.server import CudaServer
from cubecl_server.backend import Artifact
from cubecl_server.backend.compiling import ArtifactStore
from cubecl_server.backend.support import ArtifactRejected

__all__ = ["CudaTarget"]


class CudaTarget:
    """Loads cuda artifacts as modules on one server's device; its store is the one
    the core opened for this architecture and NVRTC."""

    def __init__(self, server: CudaServer, store: ArtifactStore | None) -> None:
        self.server = server
        self.store = store

    def load(self, artifact: Artifact) -> LoadedCudaKernel:
        """A module from the cubin, or from the PTX where the driver refuses the cubin."""
        cubin, ptx = split_payload(artifact)
        h = artifact.header
        entry, params, dim = h.get("entry_point"), h.get("params"), h.get("cube_dim")
        if not isinstance(entry, str) or not isinstance(params, list) \
                or not isinstance(dim, list) or len(dim) != 3:
            raise ArtifactRejected("cuda artifact header lacks entry point, params or dim")
        errors = []
        for image, from_ptx in ((cubin, False), (ptx + b"\0", True)):
            try:
                module, function = self.server.load_module(image, entry)
            except ArtifactRejected as e:
                errors.append(f"{'ptx' if from_ptx else 'cubin'}: {e}")
                continue
            return LoadedCudaKernel(str(h.get("kernel", entry)), function, module,
                                    tuple(Param.from_json(p) for p in params),
                                    (int(dim[0]), int(dim[1]), int(dim[2])), from_ptx)
        raise ArtifactRejected("the driver loads neither image: " + "; ".join(errors))
