"""LLVM, once per process: the host's target machine, the optimisation pipeline, object
code from LLVM IR text, and object code linked into the process (MCJIT's runtime
linker: no compiler runs there)."""

from __future__ import annotations

import hashlib
import threading
from functools import cache

import llvmlite
import llvmlite.binding as llvm

__all__ = ["OPT_LEVEL", "compile_object", "f16_in_hardware", "load_object", "toolchain"]

OPT_LEVEL = 2
"""LLVM's optimisation level for every kernel: loops vectorised, compile time modest."""

# LLVM's objects are not all safe to share between threads: one compile at a time.
_LOCK = threading.Lock()


@cache
def _native_target() -> None:
    """LLVM's native target initialised, once: all that linking object code needs."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


@cache
def _machine() -> llvm.TargetMachine:
    """The process's target machine: this host's CPU, with all its features (only
    compiling needs it: a process that loads stored object code never makes one)."""
    _native_target()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=OPT_LEVEL, reloc="pic", codemodel="default")


@cache
def f16_in_hardware() -> bool:
    """Whether this CPU converts f16 itself: F16C on x86 (without it LLVM would call
    compiler-rt, which the process lacks), always elsewhere."""
    if not llvm.get_process_triple().startswith(("x86_64", "i386", "i686")):
        return True
    return llvm.get_host_cpu_features().get("f16c", False)


@cache
def toolchain() -> str:
    """What decides the object code besides the kernel: the triple, the CPU and its
    features, LLVM's and llvmlite's versions, the optimisation level."""
    features = llvm.get_host_cpu_features().flatten()
    tag = hashlib.sha256(features.encode()).hexdigest()[:12]
    v = ".".join(map(str, llvm.llvm_version_info))
    return (f"{llvm.get_process_triple()}-{llvm.get_host_cpu_name()}-{tag}"
            f"-llvm{v}-llvmlite{llvmlite.__version__}-O{OPT_LEVEL}")


def compile_object(text: str) -> bytes:
    """LLVM IR ``text`` optimised and compiled to this host's object code.

    Raises RuntimeError with LLVM's message where the text is not valid IR."""
    with _LOCK:
        tm = _machine()
        mod = llvm.parse_assembly(text)
        mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
        pto.loop_vectorization = pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return tm.emit_object(mod)


class LoadedObject:
    """Object code linked into this process; keeps its memory mapped while alive."""

    def __init__(self, engine: llvm.ExecutionEngine, obj: llvm.ObjectFileRef) -> None:
        self.engine, self.obj = engine, obj

    def address(self, symbol: str) -> int:
        """The address of ``symbol`` (0 where the object has none)."""
        return int(self.engine.get_function_address(symbol))


def load_object(data: bytes) -> LoadedObject:
    """``data`` (from :func:`compile_object`) linked into the process."""
    with _LOCK:
        _native_target()
        # An engine owns (and frees) the target machine it is given: a plain one of
        # its own, which only links here (the object code was compiled already).
        tm = llvm.Target.from_default_triple().create_target_machine(
            reloc="pic", codemodel="default")
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        obj = llvm.ObjectFileRef.from_data(data)
        engine.add_object_file(obj)
        engine.finalize_object()
        return LoadedObject(engine, obj)
