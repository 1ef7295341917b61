"""Many processes on one store and one PoCL at once: none may crash
(:mod:`cubecl_opencl.pocl` says why they did).

The 8 x 40 x 2 runs take about a minute each on two cores; they carry the marker
``concurrency`` (``-m "not concurrency"`` for a quick run), and the default run,
which CI makes, runs them.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cubecl_opencl import pocl
from cubecl_opencl.artifact import OpenclTarget, program_key

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.compiler.record import CompilationOutcome, CompilationRecording
from cubecl_server.conformance.suite.test_compile_path import run_concurrent_waves
from cubecl_server.errors import ArtifactRejected
from cubecl_server.kernel import CubeCount, CubeDim

from .kernels import double

PROCESSES, KERNELS = 8, 40


def _pocl_env(tmp_path: Path, cache: bool) -> dict[str, str]:
    return {"CUBECL_CACHE_DIR": str(tmp_path / "store"),
            "POCL_CACHE_DIR": str(tmp_path / "pocl"),
            "POCL_KERNEL_CACHE": "1" if cache else "0"}


@pytest.mark.concurrency
def test_eight_processes_with_pocl_cache_on(tmp_path: Path) -> None:
    # PoCL's cache is shared by every process here, as it is by default: builds of
    # one program and loads of its binary meet in one PoCL directory.
    run_concurrent_waves("opencl", None, processes=PROCESSES, kernels_per_process=KERNELS,
                         env=_pocl_env(tmp_path, cache=True))
    pocl_dir = tmp_path / "pocl"
    programs = list(pocl_dir.glob("*/*/program.bc"))
    # One PoCL directory per program, shared, with the launch's work-group
    # function compiled once for all (what makes a later process's first launch
    # cheap); no process got a private one.
    assert len(programs) == KERNELS, sorted(p.parent.name for p in programs)
    assert all(list(p.parent.glob("k_*/32-1-1*/*.so")) for p in programs)
    assert not [d for d in pocl_dir.glob("cubecl-*") if d.is_dir()]


@pytest.mark.concurrency
def test_eight_processes_with_pocl_cache_off(tmp_path: Path) -> None:
    # Fewer kernels than with the cache on: with it off every process builds each
    # kernel's work-group function itself (16 x 8 x 2 builds), and what is checked,
    # a private PoCL directory per process, does not depend on how many there are.
    run_concurrent_waves("opencl", None, processes=PROCESSES, kernels_per_process=16,
                         env=_pocl_env(tmp_path, cache=False))
    # Each process had a PoCL directory of its own, inside the one given: PoCL
    # named no directory of its own there. The first wave's were removed by the
    # second wave's processes; the second's wait for the next process to start.
    entries = sorted(p.name for p in (tmp_path / "pocl").iterdir())
    assert all(e.startswith("cubecl-") for e in entries), entries
    assert len(entries) == PROCESSES, entries


_LOCK_CHILD = textwrap.dedent("""
    import json, sys, time
    from cubecl_server.client import create_client
    from cubecl_opencl import pocl
    create_client("opencl")  # PoCL reads its settings; the module learns its cache dir
    key, log = sys.argv[1], sys.argv[2]
    with pocl.program_lock(key):
        with open(log, "a") as f:
            f.write(json.dumps(["in", time.monotonic()]) + "\\n")
        time.sleep(0.3)
        with open(log, "a") as f:
            f.write(json.dumps(["out", time.monotonic()]) + "\\n")
""")


def test_a_program_lock_excludes_other_processes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    env = {**os.environ, **_pocl_env(tmp_path, cache=True)}
    key = program_key("__kernel void k() {}")
    procs = [subprocess.Popen([sys.executable, "-c", _LOCK_CHILD, key, str(log)], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    events = [json.loads(line) for line in log.read_text().splitlines()]
    # Strictly in, out, in, out, ...: never two holders at once.
    assert [e[0] for e in events] == ["in", "out"] * 3, events
    assert (tmp_path / "pocl" / "cubecl-opencl-programs.lock").exists()


_PRIVATE_CHILD = textwrap.dedent("""
    import os, sys
    from cubecl_server.client import create_client
    from cubecl_opencl import pocl
    create_client("opencl")
    print(pocl.private_topdir())
    print(os.environ.get("POCL_CACHE_DIR"))
""")


def test_pocl_cache_off_gives_each_process_its_own_directory(tmp_path: Path) -> None:
    import fcntl

    base = tmp_path / "pocl"
    # A directory of a process that has ended (its owner lock is free), and one of
    # a process that is alive (this one holds its lock).
    dead, alive = base / "cubecl-1-dead", base / "cubecl-2-alive"
    for d in (dead, alive):
        d.mkdir(parents=True)
        (d / ".cubecl-owner.lock").touch()
    with open(alive / ".cubecl-owner.lock", "rb+") as held:
        fcntl.lockf(held, fcntl.LOCK_EX)
        done = subprocess.run([sys.executable, "-c", _PRIVATE_CHILD], capture_output=True,
                              text=True, timeout=120,
                              env={**os.environ, **_pocl_env(tmp_path, cache=False)})
    assert done.returncode == 0, done.stderr
    private, after = done.stdout.split()
    assert Path(private).parent == base and Path(private).name.startswith("cubecl-")
    assert after == str(base), "POCL_CACHE_DIR must be given back for later processes"
    assert not dead.exists() and alive.exists()


def test_kernel_cache_setting_is_read_as_pocl_reads_it() -> None:
    assert pocl.kernel_cache_on({})
    assert pocl.kernel_cache_on({"POCL_KERNEL_CACHE": "1"})
    for off in ("0", "true", "", "yes"):
        assert not pocl.kernel_cache_on({"POCL_KERNEL_CACHE": off}), off
    assert pocl.cache_topdir({"POCL_CACHE_DIR": "/x"}) == Path("/x")
    assert pocl.cache_topdir({"HOME": "/h"}) == Path("/h/.cache/pocl/kcache")
    assert pocl.cache_topdir({"HOME": "/h", "XDG_CACHE_HOME": "/c",
                              "POCL_KERNEL_CACHE": "0"}) == Path("/c/pocl/uncached")


def _without_program_bc(payload: bytes) -> bytes:
    """The binary a process makes when it serializes while another rewrites
    program.bc: root entry 0 (after the header of PoCL's format 9) empty."""
    at = pocl._HEADER.size
    (size,) = struct.unpack_from("<Q", payload, at)
    return payload[:at] + struct.pack("<Q", 0) + payload[at + 8 + size:]


def test_binary_structure_check(client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    if not pocl.is_pocl(ac.device.platform.name):
        pytest.skip("the device is not PoCL's")
    good = ac.build("k", "__kernel void k(__global int* a) { a[0] = 1; }\n")
    assert pocl.binary_problem(good) is None
    assert "program.bc" in (pocl.binary_problem(_without_program_bc(good)) or "")
    assert "past the binary's end" in (pocl.binary_problem(good[:-3]) or "")
    assert "follow the last kernel record" in (pocl.binary_problem(good + b"\0") or "")
    assert pocl.binary_problem(b"not pocl's") is None  # other drivers' binaries: not judged


def test_binary_without_program_bc_is_rejected_then_rebuilt(own_cache: Path) -> None:
    # Before the fix such a binary was stored, and every process loading it aborted
    # in PoCL (pocl_binary_get_kernels_metadata: Assertion 'len > 0').
    first = create_client("opencl")
    if not pocl.is_pocl(first.server.cl_device.platform.name):
        pytest.skip("the device is not PoCL's")
    a = np.arange(100, dtype=np.float32)
    ha, ho = first.create(a), first.empty(100, np.float32)
    double.launch(first, CubeCount(1), CubeDim(128), ha, ho)
    aid = first.artifact_id(double, CubeDim(128), {})
    key = KernelCacheKey.of(aid, first.loader.build_id)
    store = first.loader.target.store
    assert store is not None
    good = store.get(key)
    assert good is not None
    payload = _without_program_bc(good.payload)
    broken = Artifact(good.kind, payload,
                      {**good.header, "sha256": hashlib.sha256(payload).hexdigest()})
    target = first.loader.target
    assert isinstance(target, OpenclTarget)
    with pytest.raises(ArtifactRejected, match=r"program\.bc"):
        target.load(broken)
    store.purge(key)
    assert store.put(key, broken)
    second = create_client("opencl")
    hb, hc = second.create(a), second.empty(100, np.float32)
    with recording(second) as records:
        double.launch(second, CubeCount(1), CubeDim(128), hb, hc)
    np.testing.assert_array_equal(second.read(hc), 2 * a)
    assert [r.outcome for r in records] == [CompilationOutcome.COMPILED]


def test_artifact_names_its_program(client: ComputeClient) -> None:
    aid = client.artifact_id(double, CubeDim(64), {})
    ac = client.loader.artifact_compiler
    rec = CompilationRecording(False, "double", "opencl", ac.variant)
    compiled = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode, rec)
    artifact = ac.finalize(compiled, rec)
    assert artifact.header["program"] == program_key(compiled.source)
