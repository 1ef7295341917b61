"""The lowering every backend shares, from the IR to a target language's source.

- :class:`StructuredEmitter`: the skeleton (naming, temporaries, nesting, dispatch
  over the IR's node types, helper collection); the cpu backend's NumPy emitter and
  :class:`CEmitter` build on it.
- :class:`CEmitter`: the lowering of C-like languages, spelled by a :class:`CDialect`;
  :class:`StandardC` spells every hook as C99 does, for a dialect to subclass (the
  OpenCL C and CUDA C++ backends and the C example are dialects).
- :func:`in_bounds`: the accesses proven inside their array, which checked mode lowers
  without their check (:class:`InBounds`, asked through
  :meth:`StructuredEmitter.needs_check`).
- :class:`InfoLayout`: the words a launch passes besides its arrays (scalars, lengths,
  shapes, strides, the cube count), and :func:`fold_count` for a cube count past a
  per-axis dispatch limit (:meth:`CEmitter.fold_grid` is the kernel's side).

Backend authors import these from :mod:`cubecl_server.backend`.
"""

from cubecl_server.lowering.bounds import InBounds, in_bounds
from cubecl_server.lowering.cfamily import UNSIGNED, ArrayRef, CDialect, CEmitter, StandardC
from cubecl_server.lowering.info import InfoEntry, InfoLayout, InfoWords, fold_count
from cubecl_server.lowering.structured import StructuredEmitter, mangle, metadata_kind

__all__ = ["StructuredEmitter", "mangle", "CEmitter", "CDialect", "StandardC", "ArrayRef",
           "UNSIGNED", "InfoEntry", "InfoLayout", "InfoWords", "fold_count", "InBounds",
           "in_bounds", "metadata_kind"]
