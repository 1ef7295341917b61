"""``cubecl-server bundle ls`` as a person reads it: each artifact under its kernel's
name, every line within 100 columns unless ``--wide``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import kernels

from cubecl_server.cli import main
from cubecl_server.client import create_client
from cubecl_server.compiler import environment_database
from cubecl_server.persistence import SqliteStore, encode_artifact
from cubecl_server.persistence.bundle import Place, Target, export_bundle
from cubecl_server.persistence.signing import Secret

SECRET = "fleet-secret-for-the-bundle-listing"
# A variant as an OpenCL driver spells it.
LONG_VARIANT = ("Portable Computing Language (OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, "
                "RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG) | pthread-skylake-avx512 "
                "| driver 3.1+debian")


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)


def _ls(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main(["bundle", "ls", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_default_export_names_each_artifact_by_its_kernel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = create_client("cpu")
    a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.int32)
    kernels.add_const.launch(c, 1, 8, a, out, C=3)
    bundle = tmp_path / "one.bundle"
    assert main(["bundle", "export", str(bundle), "--backend", "cpu"]) == 0
    lines = _ls(capsys, str(bundle))
    [row] = [line for line in lines if line.startswith("artifact")]
    assert row.split()[:2] == ["artifact", "add_const"], lines


def test_a_long_variant_is_cut_to_100_columns_unless_wide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace, key = f"opencl/0.1.0/{LONG_VARIANT}/cl-binary", "ab" * 32
    db = SqliteStore.open(environment_database())
    db.put(namespace, key, encode_artifact("cl-binary", {"kernel": "saxpy"}, b"\0" * 64,
                                           namespace=namespace, key=key))
    bundle = tmp_path / "long.bundle"
    export_bundle(bundle, db, Target("opencl", LONG_VARIANT, "f" * 64),
                  [Place("artifact", "saxpy", namespace, key)],
                  Secret(SECRET.encode(), "test"))
    lines = _ls(capsys, str(bundle))
    assert all(len(line) <= 100 for line in lines), lines
    [variant] = [line for line in lines if line.startswith("variant")]
    assert variant.startswith("variant    Portable Computing") and "..." in variant
    assert variant.endswith("driver 3.1+debian")
    assert f"variant    {LONG_VARIANT}" in _ls(capsys, str(bundle), "--wide")
