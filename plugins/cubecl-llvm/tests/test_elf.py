"""The loader that links stored object code without LLVM: it gives what LLVM's own
linker gives, keeps code pages unwritable, refuses damaged bytes with an error of its
own (never a crash), and hands what it does not do to LLVM."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cubecl_llvm import backend, elf, native

import cubecl_server.backend as cb
import cubecl_server.backend.support as su
from cubecl_server.client import create_client
from cubecl_server.lang import CubeCount, CubeDim

from . import kernels

# Constants in read-only data, a counter in .bss, a value in .data reached through the
# GOT, and a call to a function of the process (through a jump beside the code).
IR = r"""
@table = private unnamed_addr constant [4 x double]
    [double 1.5, double -2.25, double 3.0e300, double 0x7FF0000000000000]
@calls = internal global i64 0
@seen = global i32 7
declare i32 @getpid()
define double @pick(i64 %i) {
  %p = getelementptr [4 x double], ptr @table, i64 0, i64 %i
  %v = load double, ptr %p
  %c = atomicrmw add ptr @calls, i64 1 seq_cst
  %s = load i32, ptr @seen
  %s1 = add i32 %s, 1
  store i32 %s1, ptr @seen
  ret double %v
}
define i64 @count() {
  %c = load i64, ptr @calls
  ret i64 %c
}
define i32 @pid() {
  %r = call i32 @getpid()
  ret i32 %r
}
"""


@pytest.fixture(scope="module")
def obj() -> bytes:
    """The module's object code, as the ArtifactCompiler makes it."""
    return native.compile_object(IR)


def _call(image: elf.Image | native.LoadedObject, name: str, restype: type,
          *argtypes: type) -> Callable[..., object]:
    address = image.address(name)
    assert address, f"no {name} in the linked object"
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


@pytest.mark.parametrize("load", [elf.link, native.load_object], ids=["elf", "mcjit"])
def test_an_object_runs_as_linked_by_either_loader(obj: bytes, load: Callable[
        [bytes], elf.Image | native.LoadedObject]) -> None:
    image = load(obj)
    pick = _call(image, "pick", ctypes.c_double, ctypes.c_int64)
    assert [pick(i) for i in range(4)] == [1.5, -2.25, 3.0e300, np.inf]
    assert _call(image, "count", ctypes.c_int64)() == 4, "the .bss counter did not count"
    assert ctypes.c_int32.from_address(image.address("seen")).value == 11
    assert _call(image, "pid", ctypes.c_int32)() == os.getpid()
    assert image.address("nothing") == 0
    again = load(obj)  # a second link has state of its own
    assert _call(again, "count", ctypes.c_int64)() == 0


def _permissions(address: int) -> str:
    for line in Path("/proc/self/maps").read_text().splitlines():
        low, high = (int(a, 16) for a in line.split()[0].split("-"))
        if low <= address < high:
            return line.split()[1]
    raise AssertionError(f"{address:#x} is not mapped")


def test_code_is_executable_and_not_writable_data_the_reverse(obj: bytes) -> None:
    image = elf.link(obj)
    assert _permissions(image.address("pick")) == "r-xp"
    assert _permissions(image.address("seen")) == "rw-p"


def _sections(data: bytes) -> list[tuple[int, ...]]:
    shoff, shnum = struct.unpack_from("<Q", data, 40)[0], struct.unpack_from("<H", data, 60)[0]
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]


def _first_relocation(data: bytes) -> int:
    return next(s[4] for s in _sections(data) if s[1] == 4)


def _with(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize(("damage", "error"), [
    (lambda d: d[:40], elf.Malformed),  # the header cut short
    (lambda d: _with(d, 40, "<Q", len(d) - 10), elf.Malformed),  # headers past the end
    (lambda d: _with(d, 60, "<H", 0), elf.Malformed),  # no sections
    (lambda d: _with(d, _first_relocation(d), "<Q", 1 << 40), elf.Malformed),  # far patch
    (lambda d: _with(d, _first_relocation(d) + 12, "<I", 1 << 30), elf.Malformed),  # symbol
    (lambda d: _with(d, _first_relocation(d) + 8, "<I", 37), elf.Unsupported),  # its kind
    (lambda d: d.replace(b"getpid\0", b"getpix\0"), elf.Unsupported),  # not in the process
    (lambda d: _with(d, 18, "<H", 183), elf.Unsupported),  # an AArch64 object
    (lambda d: b"\xcf\xfa\xed\xfe" + d[4:], elf.Unsupported),  # a Mach-O one
], ids=["cut", "headers-past-end", "no-sections", "far-patch", "no-such-symbol",
        "relocation-kind", "missing-function", "aarch64", "mach-o"])
def test_damaged_or_foreign_objects_are_refused(obj: bytes, damage: Callable[[bytes], bytes],
                                                error: type[Exception]) -> None:
    with pytest.raises(error):
        elf.link(damage(obj))


def test_random_damage_to_the_tables_never_escapes_as_another_error(obj: bytes) -> None:
    # Every byte the loader reads before trusting: the header, the section headers,
    # the symbol table and the relocations (the code's bytes it only copies).
    tables = [(0, 64)] + [(s[4], s[4] + s[5]) for s in _sections(obj) if s[1] in (2, 4)]
    shoff, shnum = struct.unpack_from("<Q", obj, 40)[0], struct.unpack_from("<H", obj, 60)[0]
    tables.append((shoff, shoff + 64 * shnum))
    spots = np.concatenate([np.arange(a, b) for a, b in tables])
    rng = np.random.default_rng(33)
    outcomes = {"linked": 0, "refused": 0}
    for _ in range(600):
        damaged = bytearray(obj)
        for at in rng.choice(spots, size=rng.integers(1, 4)):
            damaged[at] = int(rng.integers(256))
        try:
            elf.link(bytes(damaged))
            outcomes["linked"] += 1
        except (elf.Malformed, elf.Unsupported):
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100, outcomes  # the damage was seen, not skipped


def test_the_target_rejects_a_malformed_object_and_hands_a_foreign_one_to_llvm(
        obj: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    target = backend.LlvmTarget(None)
    header = {"entry_point": "pick", "meta": []}
    broken = cb.Artifact.sealed(backend.KIND, _with(obj, 40, "<Q", len(obj) - 10), header)
    with pytest.raises(su.ArtifactRejected, match="does not link"):
        target.load(broken)
    linked = []
    mcjit = native.load_object
    monkeypatch.setattr(native, "load_object", lambda d: linked.append(d) or mcjit(d))
    monkeypatch.setattr(elf, "link", lambda d: (_ for _ in ()).throw(elf.Unsupported("x")))
    assert target.load(cb.Artifact.sealed(backend.KIND, obj, header)).entry
    assert linked == [obj], "an object the loader does not link went elsewhere than LLVM"


def test_a_client_runs_on_llvm_s_linker_where_the_loader_declines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    from cubecl_server.config import reload_config

    reload_config()
    monkeypatch.setattr(elf, "link", lambda d: (_ for _ in ()).throw(elf.Unsupported("x")))
    c = create_client("llvm")
    n = 1000 + 3
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = c.create(np.zeros(n, np.float32))
    kernels.saxpy.launch(c, CubeCount((n + 63) // 64), CubeDim(64), c.create(x),
                         c.create(y), out, np.float32(-0.5))
    np.testing.assert_array_equal(c.read(out), np.float32(-0.5) * x + y)
