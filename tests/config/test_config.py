"""cubecl.toml and CUBECL_* variables: the file sets, a variable overrides, bad values
name the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubecl_server.config import config, find_config_file, reload_config
from cubecl_server.execution import ExecutionMode


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory two levels below the one holding cubecl.toml."""
    work = tmp_path / "src" / "pkg"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


def _write(project: Path, text: str) -> Path:
    path = project / "cubecl.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(project: Path) -> None:
    cfg = reload_config()
    assert find_config_file() is None and cfg.file is None
    assert cfg.backend == "cpu" and cfg.execution_mode is ExecutionMode.CHECKED
    assert cfg.compilation_cache is True and cfg.compilation_record is False


def test_the_nearest_file_above_sets_and_variables_override(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(project, 'backend = "opencl"\n[execution]\nmode = "unchecked"\n'
                           "[compilation]\ncache = false\nrecord = true\n"
                           '[cache]\ndir = "/srv/cache"\n[environment]\nname = "ci"\n')
    cfg = reload_config()
    assert cfg.file == path
    assert (cfg.backend, cfg.execution_mode) == ("opencl", ExecutionMode.UNCHECKED)
    assert (cfg.compilation_cache, cfg.compilation_record) == (False, True)
    assert (cfg.cache_dir, cfg.environment) == ("/srv/cache", "ci")
    monkeypatch.setenv("CUBECL_BACKEND", "vulkan")
    monkeypatch.setenv("CUBECL_COMPILATION_CACHE", "yes")
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", "checked")
    cfg = reload_config()
    assert (cfg.backend, cfg.compilation_cache) == ("vulkan", True)
    assert cfg.execution_mode is ExecutionMode.CHECKED
    assert config() is cfg  # read once until reloaded


@pytest.mark.parametrize(("text", "env", "message"), [
    ("[compilation]\ncache = \"no\"\n", {}, r"cache must be true or false, got 'no'"),
    ("", {"CUBECL_COMPILATION_RECORD": "maybe"}, r"CUBECL_COMPILATION_RECORD='maybe'"),
    ("", {"CUBECL_EXECUTION_MODE": "fast"}, r"execution mode 'fast'"),
    ("compilation = 3\n", {}, r"\[compilation\] must be a table"),
    ("backend = \n", {}, r"cubecl.toml"),
])
def test_bad_values_name_the_setting(project: Path, monkeypatch: pytest.MonkeyPatch,
                                     text: str, env: dict[str, str], message: str) -> None:
    path = _write(project, text)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        reload_config()
    # Leave settings that load, for the fixtures that reload them on the way out.
    path.unlink()
    for name in env:
        monkeypatch.delenv(name)
