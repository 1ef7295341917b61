"""The environment's database path, which every store access asks for and which is kept
once resolved: it still follows every variable, setting and switch it depends on."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubecl_server.compiler.store import environment_database
from cubecl_server.config import reload_config
from cubecl_server.persistence.environment import DATABASE_FILENAME, switch_environment


def test_the_database_follows_the_cache_dir_the_environment_and_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(first))
    assert environment_database() == first.resolve() / "default" / DATABASE_FILENAME
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(second))
    assert environment_database() == second.resolve() / "default" / DATABASE_FILENAME
    monkeypatch.setenv("CUBECL_ENVIRONMENT", "staging")
    assert environment_database() == second.resolve() / "staging" / DATABASE_FILENAME
    switch_environment("other")
    try:
        assert environment_database() == second.resolve() / "other" / DATABASE_FILENAME
    finally:
        switch_environment(None)
    assert environment_database() == second.resolve() / "staging" / DATABASE_FILENAME
    # A relative cache dir is relative to the working directory of each call.
    monkeypatch.setenv("CUBECL_CACHE_DIR", "rel")
    for here in (first, second):
        here.mkdir(exist_ok=True)
        monkeypatch.chdir(here)
        assert environment_database() == here.resolve() / "rel" / "staging" / DATABASE_FILENAME


def test_the_database_follows_the_config_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBECL_CACHE_DIR")
    monkeypatch.chdir(tmp_path)
    for n in (1, 2):
        (tmp_path / "cubecl.toml").write_text(f'[cache]\ndir = "{tmp_path}/c{n}"\n')
        reload_config()
        assert environment_database() == (tmp_path / f"c{n}").resolve() / "default" / \
            DATABASE_FILENAME
