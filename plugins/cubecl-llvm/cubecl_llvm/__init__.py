"""cubecl-llvm: the ``llvm`` backend of cubecl-server, native code from llvmlite.

Kernels go through the shared passes to LLVM IR (:mod:`cubecl_llvm.emitter`), are
compiled by the LLVM inside llvmlite's wheel into this host's object code, the stored
artifact (:mod:`cubecl_llvm.native`), and run on every core from ctypes
(:mod:`cubecl_llvm.backend`). Nothing comes from the system: no C compiler, no libm.
"""

from __future__ import annotations

__all__ = ["BACKEND", "__version__"]

__version__ = "0.1.0"

BACKEND = "llvm"
"""The backend name the plugin registers."""
