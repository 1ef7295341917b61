"""LLVM, once per process that needs it: the host's target machine, the optimisation
pipeline, object code from LLVM IR text, and object code linked into the process by
MCJIT's runtime linker, for the objects :mod:`cubecl_llvm.elf` does not link."""

from __future__ import annotations

import threading
from functools import cache

import llvmlite.binding as llvm

from .host import OPT_LEVEL

__all__ = ["compile_object", "load_object"]

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
