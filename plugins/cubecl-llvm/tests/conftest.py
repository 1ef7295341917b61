"""The plugin's test session: the conformance suite runs with every launch of enough
units shared among the threads, however cheap (``CUBECL_LLVM_THREADED_FROM_US=0``), so
that it checks atomics, shared memory and barriers with cubes on several threads at
once; by default a cheap launch stays on the calling thread, and
``test_llvm.py`` checks that rule by itself."""

import os

os.environ.setdefault("CUBECL_LLVM_THREADED_FROM_US", "0")
