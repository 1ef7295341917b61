"""Plugin discovery, isolation, selection and precedence, through real distributions.

Each test writes the fixture plugins of ``tests/plugins/fixtures`` into a temporary
directory beside hand-written ``.dist-info`` folders, so importlib-metadata finds
them as installed distributions, and runs a fresh interpreter with that directory
on ``PYTHONPATH``: discovery happens once per process, as it does for a user.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cubecl_server.cli import main
from cubecl_server.plugins import hookspecs

FIXTURES = Path(__file__).parent / "fixtures"
DOCS = Path(__file__).parents[2] / "docs" / "hooks.md"
PLUGIN_ENV = ("CUBECL_PLUGINS", "CUBECL_DISABLE_PLUGINS", "CUBECL_STRICT_PLUGINS")


@dataclass(frozen=True)
class Fixture:
    """A fixture plugin module and the distribution it is installed as."""

    module: str
    dist: str
    version: str


GOOD = Fixture("cubecl_fixture_good", "cubecl-fixture-good", "1.2.3")
IMPORTFAIL = Fixture("cubecl_fixture_importfail", "cubecl-fixture-importfail", "0.1")
REGISTERFAIL = Fixture("cubecl_fixture_registerfail", "cubecl-fixture-registerfail", "0.2")
OVERRIDE = Fixture("cubecl_fixture_override", "cubecl-fixture-override", "3.0")
DUPLICATE = Fixture("cubecl_fixture_duplicate", "cubecl-fixture-duplicate", "0.3")
TYPO = Fixture("cubecl_fixture_typo", "cubecl-fixture-typo", "0.4")
REENTRANT = Fixture("cubecl_fixture_reentrant", "cubecl-fixture-reentrant", "0.5")
OBSERVER = Fixture("cubecl_fixture_observer", "cubecl-fixture-observer", "0.6")
RAISING = Fixture("cubecl_fixture_raising", "cubecl-fixture-raising", "0.7")
RIVAL = Fixture("cubecl_fixture_rival", "cubecl-fixture-rival", "0.9")
BADFACTORY = Fixture("cubecl_fixture_badfactory", "cubecl-fixture-badfactory", "0.8")
OTHERCONTRACT = Fixture("cubecl_fixture_othercontract", "cubecl-fixture-othercontract", "9.0")
NOCONTRACT = Fixture("cubecl_fixture_nocontract", "cubecl-fixture-nocontract", "0.0.1")

STANDARD = {"good": GOOD, "importfail": IMPORTFAIL, "registerfail": REGISTERFAIL}


def make_site(root: Path, plugins: Mapping[str, Fixture]) -> Path:
    """A directory importlib-metadata sees as holding ``plugins`` installed, each
    entry point (name -> fixture) in group ``cubecl_server``."""
    site = root / "site"
    site.mkdir(parents=True)
    by_dist: dict[Fixture, list[str]] = {}
    for name, fixture in plugins.items():
        by_dist.setdefault(fixture, []).append(name)
    for fixture, names in by_dist.items():
        shutil.copy(FIXTURES / f"{fixture.module}.py", site)
        info = site / f"{fixture.dist.replace('-', '_')}-{fixture.version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {fixture.dist}\nVersion: {fixture.version}\n")
        (info / "entry_points.txt").write_text(
            "[cubecl_server]\n" + "".join(f"{n} = {fixture.module}\n" for n in names))
    return site


def run_python(site: Path, args: list[str], env: Mapping[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run a fresh interpreter with ``site`` on its path and the plugin variables
    unset unless ``env`` gives them - except the allow list, which by default names
    the site's own entry points, so plugins installed in the venv stay out of it."""
    full = {k: v for k, v in os.environ.items() if k not in PLUGIN_ENV}
    full["PYTHONPATH"] = str(site)
    full["CUBECL_PLUGINS"] = ",".join(
        line.split("=")[0].strip()
        for eps in site.glob("*.dist-info/entry_points.txt")
        for line in eps.read_text().splitlines()[1:] if "=" in line)
    full.update(env or {})
    return subprocess.run([sys.executable, *args], env=full, cwd=site.parent,
                          capture_output=True, text=True, timeout=120)


def list_backends(site: Path, env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``cubecl-server backends --json`` by name; asserts that it exits 0."""
    done = run_python(site, ["-m", "cubecl_server.cli", "backends", "--json"], env)
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def run_script(site: Path, source: str, env: Mapping[str, str] | None = None) -> Any:
    """Run ``source`` in a fresh interpreter; what it printed last, as JSON."""
    done = run_python(site, ["-c", textwrap.dedent(source)], env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def external(rows: Mapping[str, dict[str, Any]]) -> set[str]:
    """The rows that come from the fixture distributions (not the core, nor whatever
    else the environment has installed)."""
    return {name for name, row in rows.items() if row["distribution"].startswith("cubecl-fixture")}


def test_listing_reports_ok_unavailable_and_broken(tmp_path: Path) -> None:
    done = run_python(make_site(tmp_path, STANDARD),
                      ["-m", "cubecl_server.cli", "backends", "--json"])
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}

    assert rows["fixture"] == {
        "name": "fixture", "distribution": "cubecl-fixture-good", "version": "1.2.3",
        "status": "ok", "reason": "", "devices": ["fixture:0 Fixture Device"],
        "selected": False,
    }
    assert rows["fixture_nodev"]["status"] == "unavailable"
    assert rows["fixture_nodev"]["reason"] == "no device here"
    assert rows["fixture_empty"]["status"] == "unavailable"
    assert rows["fixture_empty"]["reason"] == "no device found"

    broken = rows["importfail"]
    assert broken["status"] == "broken"
    assert (broken["distribution"], broken["version"]) == ("cubecl-fixture-importfail", "0.1")
    assert broken["error"] == "ImportError: fixture plugin cannot be imported"
    assert "cubecl_fixture_importfail.py" in broken["traceback"]
    assert rows["registerfail"]["status"] == "broken"
    assert rows["registerfail"]["error"] == "RuntimeError: register exploded"

    # the built-in backend is registered through the same hooks, and unharmed
    assert rows["cpu"]["distribution"] == "cubecl-server"
    assert rows["cpu"]["status"] == "ok"

    # each broken plugin is logged once, as a warning
    assert done.stderr.count("'importfail'") == 1
    assert done.stderr.count("'registerfail'") == 1


def test_table_lists_status_with_reason(tmp_path: Path) -> None:
    # --wide: each reason on one line (within 100 columns it is wrapped).
    done = run_python(make_site(tmp_path, STANDARD),
                      ["-m", "cubecl_server.cli", "backends", "--wide"])
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert lines["NAME"].split() == ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "DEVICES"]
    assert lines["fixture"].split() == [
        "fixture", "cubecl-fixture-good", "1.2.3", "ok", "fixture:0", "Fixture", "Device"]
    # The reason stands where the devices would.
    assert re.search(r"  unavailable  +\(no device here\)$", lines["fixture_nodev"])
    assert re.search(r"  broken  +\(ImportError: fixture plugin cannot be imported\)$",
                     lines["importfail"])


def test_allow_list_loads_only_the_named_plugins(tmp_path: Path) -> None:
    site = make_site(tmp_path, STANDARD)
    rows = list_backends(site, {"CUBECL_PLUGINS": "good"})
    assert external(rows) == {"fixture", "fixture_nodev", "fixture_empty"}
    rows = list_backends(site, {"CUBECL_PLUGINS": " good , registerfail "})
    assert external(rows) == {"fixture", "fixture_nodev", "fixture_empty", "registerfail"}


def test_empty_allow_list_loads_no_external_plugin(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, STANDARD), {"CUBECL_PLUGINS": ""})
    assert {row["distribution"] for row in rows.values()} == {"cubecl-server"}
    assert rows["cpu"]["status"] == "ok"


def test_block_list_skips_the_named_plugins(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, STANDARD),
                         {"CUBECL_DISABLE_PLUGINS": "importfail,registerfail"})
    assert external(rows) == {"fixture", "fixture_nodev", "fixture_empty"}
    assert all(row["status"] != "broken" for row in rows.values() if row["name"] in external(rows))


def test_strict_mode_fails_on_a_broken_plugin(tmp_path: Path) -> None:
    site = make_site(tmp_path, STANDARD)
    args = ["-m", "cubecl_server.cli", "backends"]
    done = run_python(site, args, {"CUBECL_STRICT_PLUGINS": "1",
                                   "CUBECL_PLUGINS": "good,importfail"})
    assert done.returncode == 1
    assert "importfail" in done.stderr
    assert "ImportError: fixture plugin cannot be imported" in done.stderr

    done = run_python(site, args, {"CUBECL_STRICT_PLUGINS": "1", "CUBECL_PLUGINS": "good"})
    assert done.returncode == 0, done.stderr


def test_discovery_is_lazy(tmp_path: Path) -> None:
    seen = run_script(make_site(tmp_path, {"good": GOOD}), """
        import json, sys
        import cubecl_server
        import cubecl_server.plugins
        seen = ["cubecl_fixture_good" in sys.modules]
        reg = cubecl_server.plugins.registry()
        seen.append("cubecl_fixture_good" in sys.modules)
        reg.descriptor("fixture")
        seen.append("cubecl_fixture_good" in sys.modules)
        print(json.dumps(seen))
    """)
    assert seen == [False, False, True]


def test_reset_registry_discovers_again_with_the_environment_then(tmp_path: Path) -> None:
    names = run_script(make_site(tmp_path, {"good": GOOD}), """
        import json, os
        from cubecl_server.plugins import registry, reset_registry
        os.environ["CUBECL_PLUGINS"] = ""
        before = sorted(row.name for row in registry().backends())
        reset_registry()
        os.environ["CUBECL_PLUGINS"] = "good"
        after = sorted(row.name for row in registry().backends())
        print(json.dumps([before, after]))
    """)
    before, after = names
    assert "fixture" not in before
    assert "fixture" in after


COMPILER_PROVIDERS = """
    import json
    from cubecl_server.backend import Capabilities
    from cubecl_server.plugins import registry
    reg = registry()
    caps = Capabilities(f64=True, f16=True)
    result = {}
    for backend in ("fixture", "cpu"):
        descriptor = reg.descriptor(backend)
        first = reg.call_firstresult("cubecl_server_compiler", descriptor=descriptor,
                                     capabilities=caps)
        through_pluggy = reg.hook.cubecl_server_compiler(descriptor=descriptor,
                                                         capabilities=caps)
        impls = reg.hook.cubecl_server_compiler.get_hookimpls()
        result[backend] = {
            "first": type(first).__module__,
            "pluggy": type(through_pluggy).__module__,
            "order": [impl.plugin_name for impl in reversed(impls)],
        }
    print(json.dumps(result))
"""


@pytest.mark.parametrize(("override_name", "winner"), [
    ("a_override", "cubecl_fixture_override"),
    ("c_override", "cubecl_fixture_rival"),
])
def test_external_plugins_take_precedence_in_entry_point_name_order(
        tmp_path: Path, override_name: str, winner: str) -> None:
    site = make_site(tmp_path, {"good": GOOD, "b_rival": RIVAL, override_name: OVERRIDE})
    result = run_script(site, COMPILER_PROVIDERS)
    assert result["fixture"]["first"] == winner
    assert result["fixture"]["pluggy"] == winner


@pytest.mark.parametrize("override_name", ["aaa_override", "zzz_override"])
def test_a_plugin_answering_for_a_backend_replaces_its_owners_part(
        tmp_path: Path, override_name: str) -> None:
    result = run_script(make_site(tmp_path, {"good": GOOD, override_name: OVERRIDE}),
                        COMPILER_PROVIDERS)
    assert result["fixture"]["first"] == result["fixture"]["pluggy"] == \
        "cubecl_fixture_override"
    assert result["fixture"]["order"][-1] == "cubecl_server.plugins.owner"

    # alone, the owner's descriptor answers
    result = run_script(make_site(tmp_path / "alone", {"good": GOOD}), COMPILER_PROVIDERS)
    assert result["fixture"]["first"] == "cubecl_fixture_good"


def test_external_plugins_take_precedence_over_the_built_in_ones(tmp_path: Path) -> None:
    result = run_script(make_site(tmp_path, {"good": GOOD, "zzz_override": OVERRIDE}),
                        COMPILER_PROVIDERS)
    cpu = result["cpu"]
    assert cpu["order"] == ["zzz_override", "cubecl_server.plugins.owner"]
    assert cpu["first"] == cpu["pluggy"] == "cubecl_fixture_override"

    # without the override, the built-in's descriptor answers for it
    result = run_script(make_site(tmp_path / "alone", {"good": GOOD}), COMPILER_PROVIDERS)
    assert result["cpu"]["first"] == "cubecl_server.backends.cpu.compiler"


def test_a_plugin_failing_in_a_firstresult_hook_is_named_and_set_apart(tmp_path: Path) -> None:
    result = run_script(make_site(tmp_path, {"override": OVERRIDE}), """
        import json
        from cubecl_server.backend import BackendDescriptor, Capabilities
        from cubecl_server.plugins import registry
        reg = registry()
        explode = BackendDescriptor(contract=1, name="explode", package="json", runtime=list,
                                    compiler=lambda capabilities: "its own",
                                    artifact_compiler=print, target=print)
        answer = reg.call_firstresult("cubecl_server_compiler", descriptor=explode,
                                      capabilities=Capabilities(f64=False, f16=False))
        print(json.dumps([answer, [(b.name, b.error) for b in reg.broken()],
                          reg.broken()[0].traceback]))
    """)
    answer, broken, trace = result
    assert answer == "its own"
    assert broken == [["override", "PluginError: failed in cubecl_server_compiler: "
                                   "ValueError: boom"]]
    assert "cubecl_fixture_override.py" in trace


RAISING_CLIENTS = """
    import json
    import numpy as np
    import kernels
    from cubecl_server.backend.compiling import backend_compiler
    from cubecl_server.client import create_client
    from cubecl_server.lang import CubeCount, CubeDim
    c = create_client("cpu")
    a, out = c.create(np.arange(5, dtype=np.float32)), c.empty(5, np.float32)
    kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)
    fixture = backend_compiler("fixture", c.capabilities)
    print(json.dumps({"cpu": c.read(out).tolist(), "fixture": type(fixture).__name__}))
"""


def test_a_plugin_whose_compiler_hook_raises_takes_no_backend_down(tmp_path: Path) -> None:
    site = make_site(tmp_path, {"good": GOOD, "raising": RAISING})
    shutil.copy(Path(__file__).parents[1] / "helpers" / "kernels.py", site)
    assert run_script(site, RAISING_CLIENTS) == {"cpu": [0.0, 2.0, 4.0, 6.0, 8.0],
                                                 "fixture": "FixtureCompiler"}
    rows = list_backends(site)
    assert rows["cpu"]["status"] == rows["fixture"]["status"] == "ok"
    assert rows["raising"]["status"] == "broken"
    assert rows["raising"]["error"] == (
        "PluginError: failed in cubecl_server_compiler: RuntimeError: compiler hook "
        "exploded for 'cpu'")


def test_a_raising_hook_is_an_error_with_its_traceback_when_strict(tmp_path: Path) -> None:
    done = run_python(make_site(tmp_path, {"raising": RAISING}),
                      ["-c", "from cubecl_server.client import create_client; "
                             "create_client('cpu')"],
                      {"CUBECL_STRICT_PLUGINS": "1"})
    assert done.returncode == 1
    assert "PluginError: plugin 'raising' (cubecl-fixture-raising 0.7) is broken" \
        in done.stderr
    assert "cubecl_fixture_raising.py" in done.stderr
    assert "compiler hook exploded for 'cpu'" in done.stderr


def test_a_backend_name_registered_twice_keeps_the_first_in_precedence(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, {"good": GOOD, "zdup": DUPLICATE}))
    assert rows["fixture"]["distribution"] == "cubecl-fixture-good"
    assert rows["fixture_own"]["status"] == "ok"
    assert rows["zdup"]["status"] == "broken"
    assert rows["zdup"]["error"] == ("PluginError: backend 'fixture' already provided by "
                                     "plugin 'good' (cubecl-fixture-good 1.2.3)")


def test_a_misspelt_hook_makes_the_plugin_broken(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, {"good": GOOD, "typo": TYPO}))
    assert rows["typo"]["status"] == "broken"
    assert "cubecl_server_compiller" in rows["typo"]["error"]
    assert rows["fixture"]["status"] == "ok"


def test_a_plugin_looking_up_plugins_at_import_is_broken_not_deadlocked(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, {"good": GOOD, "reentrant": REENTRANT}))
    assert rows["reentrant"]["status"] == "broken"
    assert "while they were being discovered" in rows["reentrant"]["error"]
    assert rows["fixture"]["status"] == "ok"


OBSERVED_LAUNCH = """
import json, numpy as np
import cubecl_fixture_observer, kernels
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.client import create_client
c = create_client("cpu")
a, out = c.create(np.ones(4, np.float32)), c.empty(4, np.float32)
kernels.scale.launch(c, CubeCount(1), CubeDim(4), a, out, 3.0)
print(json.dumps([cubecl_fixture_observer.seen, c.read(out).tolist()]))
"""


@pytest.mark.parametrize("raises", [False, True])
def test_observer_hooks_see_each_record_then_the_batch(tmp_path: Path, raises: bool) -> None:
    site = make_site(tmp_path, {"observer": OBSERVER})
    shutil.copy(Path(__file__).parents[1] / "helpers" / "kernels.py", site)
    done = run_python(site, ["-c", OBSERVED_LAUNCH],
                      {"FIXTURE_OBSERVER_RAISES": "1"} if raises else None)
    assert done.returncode == 0, done.stderr
    seen, out = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == ["record:scale:compiled", "batch:1"]
    # An observer that raises is reported, and the launch it watched still ran.
    assert out == [3.0] * 4
    assert ("observer broke" in done.stderr) is raises, done.stderr


def test_backend_not_found_names_what_exists(tmp_path: Path) -> None:
    message = run_script(make_site(tmp_path, {"good": GOOD, "importfail": IMPORTFAIL}), """
        import json
        from cubecl_server.errors import BackendNotFound
        from cubecl_server.plugins import registry
        try:
            registry().descriptor("nope")
        except BackendNotFound as exc:
            print(json.dumps(str(exc)))
    """)
    assert message.startswith("no backend 'nope'; available: cpu, fixture, fixture_empty, ")
    assert "broken plugins: importfail (ImportError: fixture plugin cannot be imported)" in message


def test_cli_without_a_command_prints_help() -> None:
    assert main([]) == 2


def test_docs_show_every_hookspec_as_declared() -> None:
    """docs/hooks.md shows each hook as hookspecs.py declares it - decorator, signature
    and docstring, verbatim - and no other: the docstrings are the one text."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    specs = {name: inspect.getsource(func)
             for name, func in inspect.getmembers(hookspecs, inspect.isfunction)
             if getattr(func, f"{hookspecs.PROJECT}_spec", None) is not None}
    assert len(specs) == 6
    for name, source in specs.items():
        assert source in blocks, (f"docs/hooks.md does not show {name} as "
                                  "cubecl_server/plugins/hookspecs.py declares it: copy "
                                  "its definition (decorator, signature, docstring) there")
    shown = [b for b in blocks if b.startswith("@hookspec")]
    assert len(shown) == len(specs), "docs/hooks.md shows a hook that is not declared"


def test_a_descriptor_factory_that_raises_sets_its_plugin_apart(tmp_path: Path) -> None:
    site = make_site(tmp_path, {"good": GOOD, "badfactory": BADFACTORY})
    rows = list_backends(site)
    assert rows["fixture"]["status"] == "ok"
    assert rows["badfactory"]["status"] == "broken"
    assert rows["badfactory"]["error"] == (
        "PluginError: failed in cubecl_server_compiler: RuntimeError: factory exploded")
    message = run_script(site, """
        import json
        from cubecl_server.backend import Capabilities
        from cubecl_server.backend.compiling import backend_compiler
        from cubecl_server.errors import PluginError
        try:
            backend_compiler("badfactory", Capabilities(f64=False, f16=False))
        except PluginError as exc:
            print(json.dumps(str(exc)))
    """)
    assert message == ("backend 'badfactory' failed in cubecl_server_compiler: RuntimeError: "
                       "factory exploded; plugin 'badfactory' (cubecl-fixture-badfactory "
                       "0.8) is set apart")


def test_a_backend_built_for_another_contract_is_listed_incompatible(tmp_path: Path) -> None:
    """Listed with the versions and what to install; a client of it is refused with the
    same reason, before any of its parts runs; the other backends are untouched."""
    site = make_site(tmp_path, {"good": GOOD, "othercontract": OTHERCONTRACT})
    rows = list_backends(site)
    row = rows["othercontract"]
    assert row["status"] == "incompatible", row
    assert "built for backend contract 2" in row["reason"], row
    assert "implements contract 1" in row["reason"], row
    assert "cubecl-fixture-othercontract" in row["reason"], row
    assert rows["fixture"]["status"] == "ok"
    done = run_python(site, ["-m", "cubecl_server.cli", "backends", "--wide"])
    assert re.search(r"  incompatible  +\(built for backend contract 2", done.stdout), \
        done.stdout
    refused = run_script(site, """
        import json
        import cubecl_server
        from cubecl_server.errors import BackendUnavailable
        try:
            cubecl_server.client("othercontract")
        except BackendUnavailable as e:
            print(json.dumps(str(e)))
    """)
    assert "'othercontract' is incompatible: built for backend contract 2" in refused


def test_a_plugin_older_than_the_contract_version_is_broken_naming_it(tmp_path: Path) -> None:
    rows = list_backends(make_site(tmp_path, {"good": GOOD, "nocontract": NOCONTRACT}))
    assert rows["nocontract"]["status"] == "broken", rows["nocontract"]
    assert "'contract'" in rows["nocontract"]["reason"], rows["nocontract"]
    assert rows["fixture"]["status"] == "ok"
