"""The host as the store's variant names it, read without LLVM: it follows what the CPU
is and can do, not its clock or the core that answered, and agrees with LLVM's view."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
import pytest
from cubecl_llvm import host

ENTRY = """processor\t: {core}
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14
stepping\t: 1
cpu MHz\t\t: {mhz}
core id\t\t: {core}
flags\t\t: fpu sse2 avx avx2 {flags}
bogomips\t: {mhz}

"""


def _clear() -> None:
    for f in (host._cpu, host.f16_in_hardware, host.toolchain):
        f.cache_clear()


@pytest.fixture
def cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """Writes a /proc/cpuinfo of two processors and answers the variant it gives."""
    def variant(flags: str = "f16c", mhz: tuple[str, str] = ("3700.0", "2600.1")) -> str:
        path = tmp_path / "cpuinfo"
        path.write_text("".join(ENTRY.format(core=k, mhz=m, flags=flags)
                                for k, m in enumerate(mhz)))
        monkeypatch.setattr(host, "_CPUINFO", str(path))
        _clear()
        return host.toolchain()

    yield variant
    _clear()


def test_the_variant_follows_the_cpu_not_its_clock(cpuinfo: Callable[..., str]) -> None:
    first = cpuinfo()
    assert cpuinfo(mhz=("1500.0", "3999.9")) == first, "the clock changed the variant"
    assert cpuinfo(flags="f16c avx512f") != first, "a new feature kept the variant"
    assert first.endswith(f"-llvmlite{llvmlite.__version__}-O{host.OPT_LEVEL}")


def test_f16_in_hardware_is_read_from_the_cpu_s_flags(cpuinfo: Callable[..., str]) -> None:
    if not host._x86():
        pytest.skip("F16C is x86's")
    cpuinfo(flags="f16c")
    assert host.f16_in_hardware()
    cpuinfo(flags="avx512f")
    assert not host.f16_in_hardware()


def test_without_cpuinfo_llvm_names_the_host(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    _clear()
    here = host.toolchain()
    monkeypatch.setattr(host, "_CPUINFO", str(tmp_path / "absent"))
    _clear()
    try:
        assert host.toolchain() != here and host.toolchain().endswith(f"-O{host.OPT_LEVEL}")
        if host._x86():
            assert host.f16_in_hardware() == llvm.get_host_cpu_features().get("f16c", False)
    finally:
        _clear()


def test_this_host_s_cpuinfo_agrees_with_llvm() -> None:
    if not Path("/proc/cpuinfo").exists() or not host._x86():
        pytest.skip("an x86 host with /proc/cpuinfo")
    _clear()
    assert host.f16_in_hardware() == llvm.get_host_cpu_features().get("f16c", False)
