"""This host as the stored object code depends on it, read without loading LLVM: what a
process needs to find its kernels in the store (the variant) and to say what it can do
(f16), before it knows whether it will compile anything."""

from __future__ import annotations

import hashlib
import platform
from functools import cache

import llvmlite  # its version only: llvmlite.binding is what loads LLVM

__all__ = ["OPT_LEVEL", "f16_in_hardware", "toolchain"]

OPT_LEVEL = 2
"""LLVM's optimisation level for every kernel: loops vectorised, compile time modest."""

_CPUINFO = "/proc/cpuinfo"
# The lines of a processor's entry that say which CPU it is and what it can do (LLVM's
# host CPU and features follow from them); the rest change with time or core.
_IDENTITY = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags",
             "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "Features")


@cache
def _cpu() -> dict[str, str]:
    """The first processor's identity in ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        with open(_CPUINFO, "rb") as f:
            text = f.read(1 << 20).decode("ascii", "replace")
    except OSError:
        return {}
    entry: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if entry:
                break
            continue
        key, _, value = line.partition(":")
        if key.strip() in _IDENTITY:
            entry[key.strip()] = value.strip()
    return entry


def _x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


@cache
def f16_in_hardware() -> bool:
    """Whether this CPU converts f16 itself: F16C on x86 (without it LLVM would call
    compiler-rt, which the process lacks), always elsewhere."""
    if not _x86():
        return True
    cpu = _cpu()
    if "flags" in cpu:
        return "f16c" in cpu["flags"].split()
    import llvmlite.binding as llvm

    return bool(llvm.get_host_cpu_features().get("f16c", False))


@cache
def toolchain() -> str:
    """What decides the object code besides the kernel: the machine, the CPU and its
    features (a hash of their ``/proc/cpuinfo`` lines, or LLVM's names of them where
    that file is absent), llvmlite's version (which fixes LLVM's) and the optimisation
    level."""
    cpu = _cpu()
    if cpu:
        seen = "\n".join(f"{k}={cpu[k]}" for k in sorted(cpu))
    else:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features().flatten()
        seen = f"{llvm.get_process_triple()}-{llvm.get_host_cpu_name()}-{features}"
    tag = hashlib.sha256(seen.encode()).hexdigest()[:16]
    return (f"{platform.system().lower()}-{platform.machine().lower()}-{tag}"
            f"-llvmlite{llvmlite.__version__}-O{OPT_LEVEL}")
