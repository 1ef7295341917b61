"""The conformance suite's pytest plugin: options, the header, capabilities, fixtures.

It does nothing until a backend is named (``--cubecl-backend NAME`` or the ini
value ``cubecl_backend``); then it adds every module of :mod:`cubecl_server.conformance.suite`
to the run, loads the backend's own conformance hooks (entry-point group
``cubecl_server.conformance``), marks the backend's expected failures, skips tests whose capability
the backend lacks (naming it), and prints the backend, its distribution, version,
device and variant in the header.

It runs the suite's smoke test (``test_smoke.py``) first: when the trivial kernel does
not compile and run, that one failure is reported and every other test of the suite
is skipped with a line saying why, instead of each failing with the same cause.
"""

from __future__ import annotations

import fnmatch
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from cubecl_server.conformance import hookspecs
from cubecl_server.errors import BackendUnavailable

if TYPE_CHECKING:
    from cubecl_server import ir
    from cubecl_server.client import ComputeClient
    from cubecl_server.device import Capabilities
    from cubecl_server.kernel import CubeDim

__all__ = [
    "HOOKS_GROUP", "SUITE_DIR", "SMOKE_MODULE", "Subject", "subject", "missing_capability",
    "elem_need", "kernel_needs", "param_needs",
    "cubecl_backend", "cubecl_subject", "cubecl_isolated", "cubecl_client", "cubecl_seed",
    "cubecl_rng",
]

SUITE_DIR = Path(__file__).resolve().parent / "suite"
"""The directory holding the suite's test modules (inside the installed package)."""

HOOKS_GROUP = "cubecl_server.conformance"
"""Entry-point group naming, per backend name, the module of the backend's conformance
hooks (:mod:`cubecl_server.conformance.hookspecs`); the plugin loads it with the suite."""

SMOKE_MODULE = "test_smoke.py"
"""The suite module that runs first; when one of its tests fails, the rest is skipped."""

_SUBJECT = pytest.StashKey["Subject"]()
_SEED = pytest.StashKey[int]()
_CLEARED_VARIABLES = ("CUBECL_ENVIRONMENT", "CUBECL_BUILD_ID", "CUBECL_COMPILATION_CACHE",
                      "CUBECL_COMPILATION_RECORD", "CUBECL_EXECUTION_MODE", "CUBECL_STORE_URL")


@dataclass
class Subject:
    """The backend under test, and what the run knows about it."""

    backend: str
    device: int | None
    expected: dict[str, str] = field(default_factory=dict)
    matched: set[str] = field(default_factory=set)
    smoke_failed: str | None = None
    """The id of the smoke test that failed, once one has: the rest is skipped."""
    _client: ComputeClient | None = None

    def client(self) -> ComputeClient:
        """A client of the backend for the whole run (for capabilities and the header)."""
        if self._client is None:
            from cubecl_server.client import create_client

            try:
                self._client = create_client(self.backend, self.device)
            except BackendUnavailable:
                # No device here: the compile-only half of the suite still runs.
                self._client = create_client(self.backend, self.device, compile_only=True)
        return self._client

    @property
    def capabilities(self) -> Capabilities:
        """What the backend's device declares it supports."""
        return self.client().capabilities

    def distribution(self) -> tuple[str, str]:
        """The distribution that provides the backend's package, and its version."""
        from cubecl_server.plugins.registry import registry

        package = registry().descriptor(self.backend).package
        top = package.split(".")[0]
        names = list(metadata.packages_distributions().get(top, []))
        # Editable installs may not list their packages: try the usual spelling, then
        # the distribution whose entry point loads the package.
        names.append(top.replace("_", "-"))
        names += [ep.dist.name for ep in metadata.entry_points(group="cubecl_server")
                  if ep.dist is not None and ep.value.split(".")[0].split(":")[0] == top]
        for name in names:
            try:
                return name, metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return f"(package {package}, no distribution found)", "?"


def subject(config: pytest.Config) -> Subject | None:
    """The backend under test, or None when the suite was not asked for."""
    return config.stash.get(_SUBJECT, None)


def missing_capability(caps: Capabilities, need: str) -> str | None:
    """Why ``caps`` do not satisfy the capability ``need``, or None if they do.

    Names: ``f64``, ``f16``, ``int64``, ``int8``, ``int16``, ``atomics:<elem>`` (``atomics:i32``),
    ``shared_memory:<bytes>``, ``cube_dim:<units>``, ``plane``, ``barrier``, ``device``,
    ``line:<size>`` (``line:4``).
    """
    from cubecl_server.ir import Elem

    kind, _, arg = need.partition(":")
    if kind == "f64":
        return None if caps.f64 else "f64"
    if kind == "f16":
        return None if caps.f16 else "f16"
    if kind == "int64":
        return None if caps.int64 else "64-bit integers (int64)"
    if kind == "int8":
        return None if caps.int8 else "8-bit integers (int8)"
    if kind == "int16":
        return None if caps.int16 else "16-bit integers (int16)"
    if kind == "atomics":
        return None if Elem(arg) in caps.atomics else f"atomics on {arg}"
    if kind == "shared_memory":
        ok = caps.shared_memory_bytes >= int(arg)
        return None if ok else (f"shared memory of {arg} bytes (the device has "
                                f"{caps.shared_memory_bytes})")
    if kind == "cube_dim":
        ok = caps.max_cube_dim >= int(arg)
        return None if ok else f"cubes of {arg} units (max_cube_dim {caps.max_cube_dim})"
    if kind == "plane":
        return None if caps.plane_size is not None else "plane (subgroup) operations"
    if kind == "barrier":
        return None if caps.barrier else "barriers (sync_cube; Capabilities.barrier)"
    if kind == "device":
        return None if caps.device_present else "a device (the backend is compile-only here)"
    if kind == "tma":
        return None if caps.tma else ("tensor maps (the `tma` capability, Capabilities.tma: "
                                      "CUDA on sm_90 and later)")
    if kind == "debug_print":
        return None if caps.debug_print else "printing from kernels (debug_print)"
    if kind == "line":
        return None if int(arg) in caps.line_sizes else (
            f"lines of {arg} (Capabilities.line_sizes {caps.line_sizes})")
    raise ValueError(f"unknown capability {need!r} in a requires marker")


def elem_need(elem: ir.Elem) -> str | None:
    """The capability (a name :func:`missing_capability` takes) that values of ``elem``
    need, or None for the types every device has (f32, i32, u32, bool)."""
    from cubecl_server.ir import Elem

    if elem in (Elem.F64, Elem.F16):
        return elem.value
    if elem in (Elem.I64, Elem.U64):
        return "int64"
    if elem.is_minifloat:
        return "int8"  # kept as bytes
    return f"int{elem.bits}" if elem.is_narrow else None


def param_needs(item: pytest.Item) -> list[str]:
    """The capabilities the element types among a test's parameters need: a test
    parametrized by an element type skips where the device lacks it, with no marker to
    forget (``i8`` needs ``int8``, ``f64`` needs ``f64``)."""
    from cubecl_server.ir import Elem

    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    elems: list[Elem] = []
    for value in callspec.params.values():
        values = value if isinstance(value, (tuple, list)) else (value,)
        elems += [v for v in values if isinstance(v, Elem)]
    return sorted({need for e in elems if (need := elem_need(e)) is not None})


def kernel_needs(kernel: ir.Kernel, cube_dim: CubeDim) -> list[str]:
    """The capabilities (names as :func:`missing_capability` takes them) a device needs
    to compile and run ``kernel`` in cubes of ``cube_dim``: read from its IR, so a test
    that only lowers a kernel skips on a device that could never launch it."""
    from cubecl_server import ir as _ir
    from cubecl_server.validation import shared_memory_bytes, uses_barrier

    needs = [f"cube_dim:{cube_dim.total}"]
    needs += sorted({need for e in kernel.elems if (need := elem_need(e)) is not None})
    if kernel.shared:
        needs.append(f"shared_memory:{shared_memory_bytes(kernel)}")
    needs += sorted({f"line:{p.line}" for p in kernel.params if p.line > 1})
    if uses_barrier(kernel):
        needs.append("barrier")
    if any(p.tensor_map for p in kernel.params):
        needs.append("tma")
    nodes = list(_ir.walk(kernel.body))
    if any(isinstance(n, (_ir.PlaneOp, _ir.SyncPlane)) for n in nodes):
        needs.append("plane")
    if any(isinstance(n, _ir.DebugPrint) for n in nodes):
        needs.append("debug_print")
    needs += sorted({f"atomics:{_atomic_need(kernel, n).value}"
                     for n in nodes if isinstance(n, _ir.AtomicStmt)})
    return needs


def _atomic_need(kernel: ir.Kernel, atomic: ir.AtomicStmt) -> ir.Elem:
    """The element type whose atomics an atomic needs: its array's, except ``max`` and
    ``min`` on f32, a compare-exchange loop on the bits (``docs/ir.md``)."""
    from cubecl_server import ir as _ir

    elem = _atomic_elem(kernel, atomic.array)
    if elem is _ir.Elem.F32 and atomic.op in (_ir.AtomicOp.MAX, _ir.AtomicOp.MIN):
        return _ir.Elem.U32
    return elem


def _atomic_elem(kernel: ir.Kernel, array: str) -> ir.Elem:
    """The element type of the array (parameter or shared) an atomic acts on."""
    for decl in (*kernel.params, *kernel.shared, *getattr(kernel, "local_arrays", ())):
        if decl.name == array:
            return decl.elem
    raise ValueError(f"kernel {kernel.name!r}: an atomic on {array!r}, which it does not "
                     "declare")


def _in_suite(path: Path) -> bool:
    return path == SUITE_DIR or SUITE_DIR in path.parents


def suite_id(item: pytest.Item) -> str:
    """An item's id relative to the suite: ``test_language.py::TestBinary::test_op[add-i32]``."""
    rel = Path(item.path).resolve().relative_to(SUITE_DIR).as_posix()
    return "::".join([rel, *item.nodeid.split("::")[1:]])


def _matches(test: str, key: str) -> bool:
    return (test == key or test.startswith((key + "::", key + "["))
            or fnmatch.fnmatchcase(test, key))


# ---------------------------------------------------------------- pytest hooks


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Make the backend-side hooks (expected failures, artifact validation) known."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suite's command-line options and ini values."""
    group = parser.getgroup("cubecl", "cubecl-server conformance suite")
    group.addoption("--cubecl-backend", dest="cubecl_backend", default=None, metavar="NAME",
                    help="run the cubecl-server conformance suite against backend NAME")
    group.addoption("--cubecl-device", dest="cubecl_device", type=int, default=None,
                    metavar="INDEX", help="device index of the backend (default: its first)")
    group.addoption("--cubecl-seed", dest="cubecl_seed", type=int, default=None,
                    metavar="SEED", help="random seed for every test (default: a fresh one "
                    "per test, shown when it fails)")
    parser.addini("cubecl_backend", "backend the conformance suite runs against (as "
                  "--cubecl-backend)", default="")
    parser.addini("cubecl_xfail", "conformance tests expected to fail: lines of "
                  "'TEST-ID: reason'", type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; when a backend is named, add the suite to the run."""
    config.addinivalue_line("markers", "requires(*capabilities): the test needs these "
                            "backend capabilities (f64, f16, int64, int8, int16, atomics:i32, "
                            "shared_memory:N, cube_dim:N, plane, barrier, device, line:N); "
                            "skipped, "
                            "naming them, otherwise")
    config.addinivalue_line("markers", "compile_only: the test runs without a device "
                            "(lower and finalize only)")
    backend = config.getoption("cubecl_backend", None) or config.getini("cubecl_backend")
    if not backend:
        return
    from cubecl_server.errors import BackendNotFound
    from cubecl_server.plugins.registry import registry

    try:
        registry().descriptor(backend)
    except BackendNotFound as e:
        raise pytest.UsageError(f"--cubecl-backend: {e}") from None
    _load_backend_hooks(config, backend)
    expected: dict[str, str] = {}
    for line in config.getini("cubecl_xfail"):
        # A test id holds "::" itself, never ": ": that is where the reason starts.
        key, _, reason = line.partition(": ")
        expected[key.strip()] = reason.strip() or "listed in cubecl_xfail"
    for found in config.hook.pytest_cubecl_expected_failures(config=config, backend=backend):
        expected.update(_expected_mapping(found))
    config.stash[_SUBJECT] = Subject(backend, config.getoption("cubecl_device", None),
                                     expected)
    if not any(_names_suite(arg, config) for arg in config.args):
        # The directory, not its files: test ids then keep their file name
        # (suite/test_memory.py::TestMemory::...), so two suite files never collide.
        config.args.append(str(SUITE_DIR))


def _load_backend_hooks(config: pytest.Config, backend: str) -> None:
    # Installed with the backend, not in its tests/conftest.py, so that its expected
    # failures and artifact checks apply wherever the suite runs against it, the CLI too.
    for ep in metadata.entry_points(group=HOOKS_GROUP, name=backend):
        config.pluginmanager.import_plugin(ep.value)  # once, also if already given by -p


def _expected_mapping(found: Mapping[str, str] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (found or {}).items()}


def _names_suite(arg: str, config: pytest.Config) -> bool:
    if arg.startswith("cubecl_server.conformance"):
        return True  # --pyargs
    path = Path(arg.split("::")[0])
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    return _in_suite(path.resolve())


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The backend, its distribution and version, its device, variant and capabilities."""
    subj = subject(config)
    if subj is None:
        return []
    try:
        c = subj.client()
        dist, version = subj.distribution()
        caps = c.capabilities
    except Exception as e:
        return [f"cubecl conformance: backend {subj.backend}: cannot create a client: "
                f"{type(e).__name__}: {e}"]
    atomics = ",".join(sorted(e.value for e in caps.atomics)) or "none"
    lines = [
        f"cubecl conformance: backend {subj.backend} ({dist} {version})",
        f"cubecl device: {c.device} ({c.device.kind.value}"
        + (f", driver {c.device.driver_version}" if c.device.driver_version else "")
        + f"), variant {c.loader.artifact_compiler.variant}",
        f"cubecl capabilities: f64={caps.f64} f16={caps.f16} int64={caps.int64} "
        f"int8={caps.int8} int16={caps.int16} "
        f"atomics={atomics} "
        f"shared_memory={caps.shared_memory_bytes}B max_cube_dim={caps.max_cube_dim} "
        f"plane_size={caps.plane_size} barrier={caps.barrier} "
        f"device_present={caps.device_present}",
    ]
    if subj.expected:
        lines.append(f"cubecl expected failures: {len(subj.expected)}")
    return lines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the smoke test first, and mark the backend's expected failures as strict
    xfails."""
    subj = subject(config)
    if subj is None:
        return
    # Stable: the smoke tests move to the front, everything else keeps its order.
    items.sort(key=lambda item: not _is_smoke(item))
    if not subj.expected:
        return
    for item in items:
        if not _in_suite(Path(item.path).resolve()):
            continue
        test = suite_id(item)
        for key, reason in subj.expected.items():
            if _matches(test, key):
                subj.matched.add(key)
                item.add_marker(pytest.mark.xfail(reason=f"expected on {subj.backend}: "
                                                  f"{reason}", strict=True))
                break


def _is_smoke(item: pytest.Item) -> bool:
    path = Path(item.path).resolve()
    return _in_suite(path) and path.name == SMOKE_MODULE


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Name the expected failures that matched no test (a typo, or a renamed test)."""
    subj = subject(config)
    if subj is None:
        return
    stale = sorted(set(subj.expected) - subj.matched)
    if stale and not config.getoption("keyword") and not config.getoption("markexpr"):
        terminalreporter.write_line("cubecl expected failures matching no test: "
                                    + ", ".join(stale), yellow=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a suite test whose capability the backend lacks, naming the capability, and
    every test after a failed smoke test, saying so."""
    subj = subject(item.config)
    if subj is None or not _in_suite(Path(item.path).resolve()):
        return
    if subj.smoke_failed is not None and not _is_smoke(item):
        pytest.skip(f"the smoke test {subj.smoke_failed} failed: backend {subj.backend!r} "
                    "cannot compile and run the trivial kernel, so every other test would "
                    "fail the same way; fix that failure (above) first")
    caps = subj.capabilities
    needs = [str(n) for m in item.iter_markers("requires") for n in m.args]
    needs += param_needs(item)
    if any(n.startswith("shared_memory:") for n in needs):
        # Every shared-memory kernel of the suite meets its cube at barriers.
        needs.append("barrier")
    if item.get_closest_marker("compile_only") is None:
        needs.append("device")
    for need in needs:
        why = missing_capability(caps, need)
        if why is not None:
            pytest.skip(f"backend {subj.backend!r} lacks capability: {why}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """Put the test's random seed beside its failure, so it can be rerun with it; note a
    failed smoke test, so that the rest of the suite is skipped."""
    report = yield
    subj = subject(item.config)
    if (subj is not None and subj.smoke_failed is None and report.failed
            and _is_smoke(item)):
        subj.smoke_failed = suite_id(item)
    seed = item.stash.get(_SEED, None)
    if seed is not None and report.failed:
        report.sections.append(("cubecl seed", f"seed {seed}: rerun with --cubecl-seed "
                                f"{seed}"))
    return report


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def cubecl_subject(request: pytest.FixtureRequest) -> Subject:
    """The backend under test; the suite's tests fail to set up without one."""
    subj = subject(request.config)
    if subj is None:
        pytest.fail("the cubecl conformance suite needs a backend: pass "
                    "--cubecl-backend NAME (or set the ini value cubecl_backend)")
    return subj


@pytest.fixture(scope="session")
def cubecl_backend(cubecl_subject: Subject) -> str:
    """The name of the backend under test."""
    return cubecl_subject.backend


@pytest.fixture
def cubecl_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache root and default settings, so no test sees another's artifacts;
    the cache root is the value."""
    from cubecl_server.config import reload_config

    root = tmp_path / "cubecl-cache"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    for var in _CLEARED_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    reload_config()
    yield root
    reload_config()


@pytest.fixture
def cubecl_client(cubecl_subject: Subject, cubecl_isolated: Path) -> ComputeClient:
    """A new client of the backend under test (own server and loader), in a fresh cache."""
    from cubecl_server.client import create_client

    present = cubecl_subject.capabilities.device_present
    return create_client(cubecl_subject.backend, cubecl_subject.device,
                         compile_only=not present)


@pytest.fixture
def cubecl_seed(request: pytest.FixtureRequest) -> int:
    """This test's random seed: ``--cubecl-seed`` or a fresh one, reported on failure."""
    given = request.config.getoption("cubecl_seed", None)
    seed = int(given) if given is not None else secrets.randbits(63)
    request.node.stash[_SEED] = seed
    request.node.user_properties.append(("cubecl_seed", seed))
    return seed


@pytest.fixture
def cubecl_rng(cubecl_seed: int) -> np.random.Generator:
    """A NumPy generator seeded with :func:`cubecl_seed`."""
    return np.random.default_rng(cubecl_seed)

