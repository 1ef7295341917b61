"""Where the cache lives: roots, environment names, generations and per-path stores."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest

from cubecl_server.persistence import (
    SqliteStore,
    cache_root,
    database_path,
    environment_name,
    environment_path,
    generation,
    open_store,
    switch_environment,
    validate_environment_name,
)
from cubecl_server.persistence import environment as env

LOGGER = "cubecl_server.persistence"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "cache"
    monkeypatch.setenv(env.ENV_CACHE_DIR, str(root))
    monkeypatch.delenv(env.ENV_ENVIRONMENT, raising=False)
    yield root
    switch_environment(None)


VALID = ["default", "ci-2024", "a.b", "A_1", "x", "a..b", "-dash", "x" * 64]
INVALID = ["..", ".", "a/b", "/etc", "", ".hidden", "x" * 65, "a\\b", "a b", "café", "a\n",
           "../escape", "C:"]


@pytest.mark.parametrize("name", VALID)
def test_valid_names_stay_inside_the_root(name: str, isolated: Path) -> None:
    assert validate_environment_name(name) == name
    path = environment_path(name)
    assert path.parent == isolated.resolve()
    assert path.name == name


@pytest.mark.parametrize("name", INVALID)
def test_invalid_names_are_refused_by_value(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        validate_environment_name(name)
    assert repr(name) in str(caught.value)
    with pytest.raises(ValueError):
        environment_path(name)
    with pytest.raises(ValueError):
        switch_environment(name)
    with pytest.raises(ValueError):
        database_path(name)


def test_symlink_out_of_the_root_is_refused(isolated: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    isolated.mkdir()
    (isolated / "evil").symlink_to(outside)
    with pytest.raises(ValueError, match="outside the cache root"):
        environment_path("evil")


def test_cache_dir_variable_and_override(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert cache_root() == isolated.resolve()
    assert database_path() == isolated.resolve() / "default" / "cubecl.sqlite3"
    other = tmp_path / "other"
    assert cache_root(str(other)) == other.resolve()
    assert database_path("ci", other) == other.resolve() / "ci" / "cubecl.sqlite3"
    monkeypatch.delenv(env.ENV_CACHE_DIR)
    assert cache_root() == Path(platformdirs.user_cache_dir("cubecl-server")).resolve()
    monkeypatch.setenv(env.ENV_CACHE_DIR, "")
    assert cache_root() == Path(platformdirs.user_cache_dir("cubecl-server")).resolve()


def test_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert environment_name() == "default"
    monkeypatch.setenv(env.ENV_ENVIRONMENT, "nightly")
    assert environment_name() == "nightly"
    assert environment_path().name == "nightly"
    monkeypatch.setenv(env.ENV_ENVIRONMENT, "../../etc")
    with pytest.raises(ValueError, match="CUBECL_ENVIRONMENT"):
        environment_name()


def test_switch_bumps_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.ENV_ENVIRONMENT, "from-env")
    before = generation()
    switch_environment("bench")
    assert generation() == before + 1
    assert environment_name() == "bench"
    assert database_path().parent.name == "bench"
    with pytest.raises(ValueError):
        switch_environment("../bench")
    assert generation() == before + 1  # a refused switch changes nothing
    switch_environment(None)
    assert generation() == before + 2
    assert environment_name() == "from-env"


def test_open_store_is_cached_per_path(isolated: Path) -> None:
    store = open_store()
    assert isinstance(store, SqliteStore)
    assert store.path == isolated.resolve() / "default" / "cubecl.sqlite3"
    assert store.path.exists()
    assert open_store() is store
    assert open_store(database_path("default")) is store
    assert open_store(str(store.path.parent / ".." / "default" / "cubecl.sqlite3")) is store
    other = open_store(database_path("other"))
    assert other is not None and other is not store
    switch_environment("other")
    assert open_store() is other


def test_fresh_cache_dir_gives_a_fresh_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = open_store()
    assert first is not None
    first.put("ns", "k", b"v")
    monkeypatch.setenv(env.ENV_CACHE_DIR, str(tmp_path / "second"))
    second = open_store()
    assert second is not None and second is not first
    assert second.get("ns", "k") is None


def test_unusable_file_gives_none_and_one_warning(
    isolated: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    path = database_path()
    path.mkdir(parents=True)  # a directory where the file should be
    assert open_store() is None
    assert open_store() is None
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(path) in warnings[0].getMessage()
    assert "in memory" in warnings[0].getMessage()


def test_damaged_file_gives_a_fresh_store_and_one_warning(
    isolated: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    path = database_path()
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(b"\x00garbage, not a database" * 50)
    store = open_store()
    assert store is not None and open_store() is store
    assert store.put("ns", "k", b"v").value == "inserted"
    [aside] = store.moved_aside
    warnings = [r.getMessage() for r in caplog.records
                if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "damaged" in warnings[0] and str(aside) in warnings[0]


def test_unusable_directory_gives_none(isolated: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    isolated.mkdir()
    (isolated / "blocked").write_text("a file where the environment directory should be")
    assert open_store(database_path("blocked")) is None
    assert open_store(database_path("blocked")) is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
