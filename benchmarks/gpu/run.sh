#!/usr/bin/env bash
# The GPU check of issue 34, in one call on a machine with an NVIDIA GPU (the `device`
# tool's, whose Python has jax, the CUDA plugin, the build tools and the test
# dependencies, and no network): the tools' versions, cyxla built and installed, the GPU
# tests, the memory the process holds (no preallocation), and the per-call bench, each
# step bounded so that the whole ends within 10 minutes. Everything lands in $OUT (at most
# 8 files come back): versions.txt, build.log, tests.log, tests.xml, memory.json,
# bench.json, bench.png, bench.log. A failed step is recorded and the next one runs.
#
#   OUT=/some/folder bash benchmarks/gpu/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:?set OUT to the folder the results go to}"
mkdir -p "$OUT"
PYTHON="${PYTHON:-python3}"
SECONDS=0

step() { echo "== $1 (at ${SECONDS}s)"; }

step "versions"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PYTHON" --version
  "$PYTHON" -m pip list 2>/dev/null | grep -i -E "^(jax|jaxlib|nvidia-|numpy|scipy|nanobind|scikit-build)"
} >"$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

step "build and install cyxla"
timeout 300 "$PYTHON" -m pip install --no-build-isolation --no-deps . >"$OUT/build.log" 2>&1 ||
  { echo "the build failed: $OUT/build.log"; tail -30 "$OUT/build.log"; exit 1; }
"$PYTHON" -m cyxla plugins >>"$OUT/build.log" 2>&1

step "GPU tests (tests/test_gpu.py, CUDA)"
# From outside the source tree, so that the installed cyxla is the one imported; in this
# process (that machine has no pytest-xdist: pyproject.toml's addopts are replaced).
(cd "$OUT" && timeout 240 "$PYTHON" -m pytest -o addopts="" -p no:cacheprovider \
  -c "$OLDPWD/pyproject.toml" --rootdir "$OLDPWD" "$OLDPWD/tests/test_gpu.py" -rA \
  --junitxml="$OUT/tests.xml") >"$OUT/tests.log" 2>&1
echo "tests: exit $? ($(tail -1 "$OUT/tests.log"))"

step "GPU memory held: cyxla's runtime against jax.jit's default"
timeout 120 "$PYTHON" benchmarks/gpu/memory.py >"$OUT/memory.json" 2>>"$OUT/bench.log"
cat "$OUT/memory.json"

step "per-call bench on the GPU"
# jax.jit's paths run in the same process: its client grows as cyxla's does.
CYXLA_PLATFORM=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 150 "$PYTHON" -m cyxla bench --json --plot "$OUT/bench.png" \
  --rounds 11 --programs sin3,matmul100,mlp64,ew1m \
  --paths native,bound,batch_256,run,run_out,bound_py,jax_jit,jax_jit_device \
  >"$OUT/bench.json" 2>>"$OUT/bench.log"
echo "bench: exit $?"

step "done"
