"""cubecl-opencl: the ``opencl`` backend of cubecl-server, on PyOpenCL.

Kernels are lowered from the IR to OpenCL C 1.2 (:mod:`cubecl_opencl.compiler`),
built for the device into a program binary (:mod:`cubecl_opencl.artifact`) and
launched by a server over ``cl.Buffer`` storage (:mod:`cubecl_opencl.server`).
The plugin registers itself through the ``cubecl_server`` entry-point group
(:mod:`cubecl_opencl.plugin`); nothing here is cached or keyed outside the core's
loader and store.
"""

from __future__ import annotations

from cubecl_server.backend.compiling import StoreNames

__all__ = ["BACKEND", "STORE_NAMES", "__version__"]

__version__ = "0.1.0"

BACKEND = "opencl"
"""The backend name the plugin registers."""

STORE_NAMES = StoreNames(kernels="cl-binary", sources="cl-source")
"""The names of the opencl store's two maps: program binaries by kernel, and by source."""
