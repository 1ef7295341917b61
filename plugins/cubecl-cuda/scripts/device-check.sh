#!/usr/bin/env bash
# The cuda backend on a real GPU: the full conformance suite, the plugin's own tests
# and a small benchmark, then one short table. Each step has a time limit and the
# limits add up to 7m45s, so the whole check finishes in under 8 minutes.
#
#   plugins/cubecl-cuda/scripts/device-check.sh            # from anywhere
#   PYTHON=/path/to/python plugins/cubecl-cuda/scripts/device-check.sh
#
# It runs on the repository's .venv when there is one, else on PYTHON or python3. Where
# that Python cannot import the core and the plugin (a GPU machine with CuPy and pytest
# but no venv of ours), it installs the wheels of .whl/ (`make device-wheels`: the core,
# the cuda plugin, platformdirs, ml_dtypes) into a folder of its own, offline and without
# dependencies, and puts that folder on PYTHONPATH; it installs nothing else.
set -u
cd "$(dirname "$0")/../../.."
ROOT="$PWD"
if [ -z "${PYTHON:-}" ] && [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; fi
PY="${PYTHON:-python3}"
OUT="$(mktemp -d)"
if ! "$PY" -c 'import cubecl_server, cubecl_cuda' 2>/dev/null; then
  if ! ls "$ROOT"/.whl/*.whl >/dev/null 2>&1; then
    echo "$PY cannot import cubecl_server and cubecl_cuda, and .whl/ holds no wheels:" \
         "run make device-wheels where the package registries are reachable" >&2
    exit 2
  fi
  "$PY" -m pip install -q --no-index --no-deps --target "$OUT/site" "$ROOT"/.whl/*.whl || exit 2
  export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export CUBECL_CACHE_DIR="$OUT/cache"   # a cold store: the first compile of each kernel is real
export PYTHONDONTWRITEBYTECODE=1
: >"$OUT/steps"

step() {  # step NAME SECONDS CMD...: run with a time limit, keep status and wall time
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" >"$OUT/$name.log" 2>&1
  echo "$name $? $((SECONDS - t0))" >>"$OUT/steps"
  tail -n 3 "$OUT/$name.log"
}

step devices 30 "$PY" -m cubecl_server.cli backends
# The whole conformance suite on the GPU, as a user runs it, with the plugin's ptxas
# check of every artifact the compile-only tests finalize.
step conformance 300 "$PY" -m cubecl_server.cli conformance cuda -q
# The plugin's own tests alone (-o addopts=-ra: the suite just ran above); the ones
# that assert there is no GPU skip themselves.
PLUGIN="$ROOT/plugins/cubecl-cuda"
step tests 90 "$PY" -m pytest -q -p no:cacheprovider -c "$PLUGIN/pyproject.toml" \
  --rootdir "$PLUGIN" -o addopts=-ra "$PLUGIN/tests"
step benchmark 45 "$PY" - <<'PYEOF'
"""saxpy on 2**24 f32: cold and warm compile, launch time, client.profile, bandwidth."""
import time

import numpy as np

from cubecl_server.compiler.record import CompilationRecord
from cubecl_server.lang import CubeCount, CubeDim, kernel
from cubecl_server.lang import ABSOLUTE_POS, Array, f32
from cubecl_server.client import create_client, recording
from cubecl_server.timestamp_profiler import TimingMethod


@kernel
def saxpy(x: Array[f32], y: Array[f32], a: f32) -> None:
    i = ABSOLUTE_POS
    if i < len(y):
        y[i] = a * x[i] + y[i]


n, dim = 1 << 24, CubeDim(256)
count = CubeCount((n + 255) // 256)
c = create_client("cuda")
x, y = c.create(np.ones(n, np.float32)), c.create(np.full(n, 2.0, np.float32))
with recording(c) as records:
    t = time.perf_counter()
    saxpy.launch(c, count, dim, x, y, 3.0)
    c.sync()
    cold_ms = (time.perf_counter() - t) * 1e3
rec: CompilationRecord = records[0]
assert np.all(c.read(y) == 5.0), "saxpy gave a wrong result"
ms = c.server.elapsed_ms(lambda: [saxpy.launch(c, count, dim, x, y, 3.0) for _ in range(20)])
per = ms / 20
# client.profile: the server is a DeviceTimer, so the sum of each launch's event pair.
one = c.profile(lambda: saxpy.launch(c, count, dim, x, y, 3.0))
took = c.profile(lambda: [saxpy.launch(c, count, dim, x, y, 3.0) for _ in range(20)])
assert took.method is TimingMethod.DEVICE, took
assert 0 < one.seconds < took.seconds, (one, took)
print(f"device {c.device}")
print(f"first launch (compile+load) {cold_ms:.1f} ms, nvrtc "
      f"{sum(s.ms for s in rec.stages if s.name == 'finalize'):.1f} ms, outcome {rec.outcome.value}")
print(f"profile (client.profile, {took.method.value}): {took.seconds / 20 * 1e6:.1f} us/launch "
      f"over 20, {one.seconds * 1e6:.1f} us for 1")
print(f"saxpy 2^24 f32: {per * 1e3:.1f} us/launch, {3 * 4 * n / per / 1e6:.1f} GB/s")

# The host cost of one launch beside CuPy's RawKernel called as its docs show (the
# kernel compiled once, then called with the grid, the block and the arguments): 200
# launches of a 1,024-element saxpy without a sync, best of 15 rounds.
import cupy

src = r"""extern "C" __global__ void saxpy(const float* x, float* y, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""
raw = cupy.RawKernel(src, "saxpy")
small = 1024
sx, sy = cupy.ones(small, cupy.float32), cupy.zeros(small, cupy.float32)
hx, hy = c.create(np.ones(small, np.float32)), c.create(np.zeros(small, np.float32))
sc, sd = CubeCount(small // 256), CubeDim(256)


def best(call) -> float:
    rounds = []
    for _ in range(15):
        cupy.cuda.Device().synchronize()
        c.sync()
        t = time.perf_counter()
        for _ in range(200):
            call()
        rounds.append((time.perf_counter() - t) / 200 * 1e6)
    cupy.cuda.Device().synchronize()
    c.sync()
    return min(rounds)


ours = best(lambda: saxpy.launch(c, sc, sd, hx, hy, np.float32(1.0)))
peer = best(lambda: raw((small // 256,), (256,), (sx, sy, np.float32(1.0), np.uint32(small))))
print(f"launch 1024 f32 (no sync): ours {ours:.1f} us, CuPy RawKernel {peer:.1f} us, "
      f"{ours / peer:.2f}x")
PYEOF

echo
echo "cubecl-cuda device check"
printf '%-14s %-6s %6s  %s\n' STEP STATUS SECONDS SUMMARY
while read -r name rc secs; do
  case "$name" in
    conformance|tests) summary=$(grep -E '[0-9]+ (passed|failed|error|skipped)' \
                           "$OUT/$name.log" | tail -n 1 | tr -d '=' | sed 's/^ *//') ;;
    devices) summary=$(grep -E '^cuda ' "$OUT/$name.log" | tr -s ' ' | cut -c1-70) ;;
    benchmark) summary=$(grep -E '^saxpy|Error' "$OUT/$name.log" | tail -n 1) ;;
  esac
  status=$([ "$rc" = 0 ] && echo ok || { [ "$rc" = 124 ] && echo timeout || echo "fail($rc)"; })
  printf '%-14s %-6s %6s  %s\n' "$name" "$status" "$secs" "${summary:-}"
done <"$OUT/steps"
grep -E '^(device|first launch|profile|saxpy|launch)' "$OUT/benchmark.log" | sed 's/^/  /'
grep -E '^cubecl (device|capabilities)' "$OUT/conformance.log" | cut -c1-110 | sed 's/^/  /'
grep -q 'device_present=False' "$OUT/conformance.log" &&
  echo "  no GPU here: the suite ran its compile-only tests only, the benchmark cannot run"
echo "logs: $OUT"
awk '$2 != 0 { bad = 1 } END { exit bad }' "$OUT/steps"
