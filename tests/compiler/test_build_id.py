"""The build id kept in the environment's store: a later process with the same source
files takes it without hashing them, and any change to a file gives a new one."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cubecl_server.client import create_client
from cubecl_server.compiler import key
from cubecl_server.compiler.key import BUILD_IDS, build_id_hash
from cubecl_server.compiler.store import environment_database
from cubecl_server.persistence.sqlite import SqliteStore
from cubecl_server.runtime import BUILD_IDS_FILE

PACKAGE = "bid_backend"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A backend package on the path: a module, and a subpackage with one more."""
    root = tmp_path / "site" / PACKAGE
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text('"""A backend."""\n')
    (root / "lower.py").write_text("def lower(x):\n    return x + 1\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "deep.py").write_text("SCALE = 2\n")
    monkeypatch.syspath_prepend(str(root.parent))
    yield root
    # Each test's package lives in its own directory: forget the last one's module.
    sys.modules.pop(PACKAGE, None)


@pytest.fixture
def known(tmp_path: Path) -> Iterator[SqliteStore]:
    """The store build ids are kept in."""
    store = SqliteStore.open(tmp_path / "store.sqlite3")
    yield store
    store.close()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled as soon as it is written."""
    monkeypatch.setattr(key, "_SETTLE_NS", 0)


def fresh(known: SqliteStore | None) -> str:
    """The build id a new process computes (the per-process memo forgotten)."""
    key._build_id.cache_clear()
    return build_id_hash(PACKAGE, known)


def kept(known: SqliteStore) -> list[bytes]:
    """The build ids the store holds."""
    return [known.get(BUILD_IDS, e.key).value for e in known.keys(BUILD_IDS)]


def test_a_kept_build_id_is_the_hashed_one_and_a_later_process_reads_no_file(
        package: Path, known: SqliteStore, settled: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = fresh(None)
    assert fresh(known) == hashed
    assert kept(known) == [hashed.encode()]

    def no_reading(h: object, package: str) -> None:
        raise AssertionError(f"{package}'s files were hashed again")

    monkeypatch.setattr(key, "_hash_package", no_reading)
    assert fresh(known) == hashed


def _same_size_edit(root: Path) -> None:
    """Rewrite a file in place with other content of the same size, and put its
    modification time back."""
    path = root / "sub" / "deep.py"
    before = path.stat()
    path.write_text("SCALE = 3\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def _append(root: Path) -> None:
    path = root / "lower.py"
    path.write_text(path.read_text() + "# one more line\n")


def _add(root: Path) -> None:
    (root / "sub" / "extra.py").write_text("X = 1\n")


def _remove(root: Path) -> None:
    (root / "sub" / "deep.py").unlink()


def _rename(root: Path) -> None:
    (root / "sub" / "deep.py").rename(root / "sub" / "renamed.py")


@pytest.mark.parametrize("change", [_same_size_edit, _append, _add, _remove, _rename],
                         ids=lambda f: f.__name__.strip("_"))
def test_any_change_to_a_source_file_gives_a_new_build_id(
        package: Path, known: SqliteStore, settled: None,
        change: Callable[[Path], None]) -> None:
    before = fresh(known)
    assert kept(known) == [before.encode()]
    change(package)
    after = fresh(known)
    assert after != before, f"{change.__name__}: the kept build id was served again"
    assert after == fresh(None), "the new build id is not the hash of the files"
    assert sorted(kept(known)) == sorted([before.encode(), after.encode()])


def test_no_build_id_is_kept_while_a_file_may_still_be_changing(
        package: Path, known: SqliteStore) -> None:
    # The files were written just now: a second change within the file system's clock
    # tick could keep their sizes and times, so nothing may be kept yet.
    assert fresh(known) == fresh(None)
    assert kept(known) == []


def test_a_malformed_kept_value_is_hashed_again(
        package: Path, known: SqliteStore, settled: None) -> None:
    fingerprint, _ = key._fingerprint(("cubecl_server", PACKAGE), "")
    known.put(BUILD_IDS, fingerprint, b"not a build id")
    assert fresh(known) == fresh(None)
    # Replaced by the hashed one: the next process reads it instead of hashing.
    assert kept(known) == [fresh(None).encode()]


def test_cubecl_build_id_gives_a_kept_id_of_its_own(
        package: Path, known: SqliteStore, settled: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    plain = fresh(known)
    monkeypatch.setenv("CUBECL_BUILD_ID", "forced")
    forced = fresh(known)
    assert forced != plain and forced == fresh(None)
    monkeypatch.delenv("CUBECL_BUILD_ID")
    assert fresh(known) == plain


def test_a_client_keeps_its_build_id_in_the_cache_root(cache_dir: Path,
                                                       settled: None) -> None:
    key._build_id.cache_clear()
    c = create_client("cpu")
    store = SqliteStore.open(cache_dir / BUILD_IDS_FILE)
    try:
        assert kept(store) == [c.loader.build_id.encode()]
        key._build_id.cache_clear()
        assert build_id_hash("cubecl_server") == c.loader.build_id
    finally:
        store.close()
    # The environment's database holds artifacts alone, as its commands list them.
    env = SqliteStore.open(environment_database())
    try:
        assert not [e for e in env.keys() if e.namespace == BUILD_IDS]
    finally:
        env.close()
