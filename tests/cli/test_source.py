"""Seeing what a backend generated: ``source_of`` and ``cubecl-server source`` print
the Compiler's source for a kernel, cube dim and comptime values, on cpu, opencl and
vulkan, building and loading nothing."""

from __future__ import annotations

import importlib.util
import shutil
import textwrap
from pathlib import Path

import pytest

from cubecl_server import ir
from cubecl_server.cli import main
from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, CubeDim, f32, kernel
from cubecl_server.lang.generated import source_of
from cubecl_server.plugins import registry

BACKENDS = ("cpu", "opencl", "vulkan")

KERNEL_FILE = textwrap.dedent('''
    from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, f32, kernel


    @kernel
    def scale_by(a: Array[f32], out: Array[f32], *, K: Comptime[int],
                 NEGATE: Comptime[bool] = False) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            v = a[i] * K
            if NEGATE:
                v = -v
            out[i] = v


    def not_a_kernel() -> None:
        pass
''')


@kernel
def scale_by(a: Array[f32], out: Array[f32], *, K: Comptime[int]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * K


@kernel
def mixes_types(a: Array[f32]) -> None:
    a[0] = a[0] + ABSOLUTE_POS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    [status] = [s for s in registry().backends() if s.name == name]
    if status.status != "ok":
        pytest.skip(f"{name} is {status.status} here: {status.reason}")
    return name


@pytest.fixture
def client(backend: str) -> ComputeClient:
    return create_client(backend)


def test_the_source_is_the_backends_for_that_kernel_dim_and_comptime(
        client: ComputeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    ac = client.loader.artifact_compiler
    # Past lowering nothing runs: no build, no store, no load.
    monkeypatch.setattr(ac, "finalize", _never, raising=False)
    with recording(client) as records:
        three = source_of(client, scale_by, CubeDim(64), K=3)
        five = source_of(client, scale_by, 64, K=5)
    assert records == []
    assert "scale_by" in three
    assert three != five, "the comptime value is baked into the source"
    assert source_of(client, scale_by, (64,), K=3) == three
    assert source_of(client, scale_by, (16, 4), K=3) != three, "the cube dim is part of it"


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("source_of finalized the kernel")


def test_a_kernel_outside_the_language_or_a_wrong_value_is_refused(
        client: ComputeClient) -> None:
    with pytest.raises(KernelSyntaxError, match="type mismatch in `a\\[0\\] \\+ ABSOLUTE_POS`"):
        source_of(client, mixes_types, 64)
    with pytest.raises(TypeError, match="needs a value for its comptime parameter `K`"):
        source_of(client, scale_by, 64)
    with pytest.raises(TypeError, match="source_of\\(\\) takes a @kernel function"):
        source_of(client, scale_by.fn, 64, K=1)
    with pytest.raises(TypeError, match="cube_dim must be a CubeDim"):
        source_of(client, scale_by, "64", K=1)


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "user_kernels.py"
    path.write_text(KERNEL_FILE)
    return path


def test_the_command_prints_what_source_of_returns(
        backend: str, kernel_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["source", f"{kernel_file}:scale_by", "--backend", backend, "--cube-dim", "8,8",
            "--comptime", "K=7", "--comptime", "NEGATE=true"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    spec = importlib.util.spec_from_file_location("user_kernels_here", kernel_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    want = source_of(create_client(backend), module.scale_by, (8, 8), K=7, NEGATE=True)
    if backend == "vulkan" and shutil.which("spirv-dis") is not None:
        # SPIR-V is printed as spirv-dis reads it (tests/test_cli_source.py), under
        # the listing's first line.
        assert out.splitlines()[:3] == [want.splitlines()[0], "; SPIR-V", "; Version: 1.3"]
    else:
        assert out.rstrip("\n") == want.rstrip("\n")
    assert main([*argv[:-2], "--comptime", "NEGATE=false"]) == 0
    assert capsys.readouterr().out != out, "NEGATE=true and false gave the same source"


@pytest.mark.parametrize(("args", "message"), [
    (["{file}:scale_b", "--comptime", "K=1"],
     "error: `scale_b` is not defined in {file}; did you mean `scale_by`? (its kernels: "
     "scale_by)"),
    (["{file}:not_a_kernel", "--comptime", "K=1"], "error: `not_a_kernel` is not a @kernel"),
    (["{file}:scale_by"], "error: kernel `scale_by` needs a value for its comptime "
                          "parameter `K`"),
    (["{file}:scale_by", "--comptime", "K=1.5"],
     "error: comptime `K` is Comptime[int], not '1.5'"),
    (["{file}:scale_by", "--comptime", "K=1", "--comptime", "NEGATE=maybe"],
     "error: comptime `NEGATE` is a bool: give true or false, not 'maybe'"),
    (["{file}:scale_by", "--comptime", "K=1", "--comptime", "M=2"],
     "error: kernel `scale_by` has no comptime parameter `M`"),
    (["{file}", "--comptime", "K=1"], "error: expected FILE.py:KERNEL"),
    (["{file}.missing:scale_by"], "error: no file "),
])
def test_a_wrong_request_is_one_line_and_exit_1(
        kernel_file: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        message: str) -> None:
    argv = ["source", *(a.format(file=kernel_file) for a in args), "--cube-dim", "64"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(message.format(file=kernel_file)), err
    assert err.count("\n") == 1


def test_a_file_that_fails_to_import_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    assert main(["source", f"{broken}:k", "--cube-dim", "64"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: importing {broken} failed: ModuleNotFoundError: ")


def test_a_bad_cube_dim_is_a_usage_error(
        kernel_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["source", f"{kernel_file}:scale_by", "--cube-dim", "0x4"])
    assert exit_info.value.code == 2
    assert "expected 1 to 3 positive ints such as 64, 16,16 or 8x8x4, not '0x4'" in \
        capsys.readouterr().err


def test_without_a_device_the_compile_only_server_shows_the_source(
        kernel_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    statuses = {s.name: s.status for s in registry().backends()}
    if statuses.get("cuda") != "unavailable":
        pytest.skip("needs the cuda plugin installed on a machine without a CUDA device")
    argv = ["source", f"{kernel_file}:scale_by", "--backend", "cuda", "--cube-dim", "64",
            "--comptime", "K=2"]
    assert main(argv) == 1
    assert capsys.readouterr().err.endswith(
        "; --compile-only lowers for cuda without a device\n")
    assert main([*argv, "--compile-only"]) == 0
    assert "__global__" in capsys.readouterr().out


def test_core_prints_what_the_emitter_receives(
        backend: str, kernel_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--core`` shows the kernel after the passes: the checked load of ``a[i]`` (not
    proven: the guard bounds ``out``) is an ``if`` on ``buffer_len(a)`` - except on
    cpu, whose own loads at the unit's position stop at the array's end
    (``Native.checked_position``) - and the IR printed is the very kernel the backend's
    Compiler lowered."""
    argv = ["source", f"{kernel_file}:scale_by", "--backend", backend, "--cube-dim", "64",
            "--comptime", "K=3", "--core"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("kernel scale_by(a: Array[f32], out: Array[f32]):")
    checked = backend != "cpu"
    assert ("if (i < buffer_len(a)):" in out) is checked
    assert "if (i < buffer_len(out))" not in out
    client = create_client(backend)
    ac = client.loader.artifact_compiler
    kid = scale_by.kernel_id({"K": 3})
    compiled = ac.lower(kid.ir, CubeDim(64), client.mode,
                        CompilationRecording(False, kid.name, backend, ac.variant))
    assert compiled.core is not None
    assert ("buffer_len(a)" in ir.format_kernel(compiled.core)) is checked


def test_a_cube_dim_past_the_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["source", "--backend", "cpu", "--cube-dim", "5000",
                 str(Path(__file__).parents[2] / "benchmarks" / "kernels.py") + ":saxpy"])
    err = capsys.readouterr().err
    assert code == 1 and "max_cube_dim of 1024" in err, err
