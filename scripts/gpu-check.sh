#!/usr/bin/env bash
# The GPU check (docs/gpu-check.md): builds the addon with its CUDA part (NCCL) against the GPU
# machine's CUDA torch and runs the CUDA tests and the GPU bench, in one call of at most
# 8 minutes. That machine has python3 with CUDA torch, nvcc, cmake, ninja and g++, but no
# Node.js and no network: everything else comes in .gpu/, made here by
# `node scripts/gpu-pack.mjs` and carried beside the working tree (docs/gpu-check.md).
#   bash scripts/gpu-check.sh          on the GPU machine, from the repository root
#   bash scripts/gpu-check.sh --cpu    a dry run on a CPU machine: the same unpack and the
#                                      same direct cmake build, against this checkout's CPU
#                                      torch (.venv) without the CUDA part, in a copy of the
#                                      working tree (/tmp/gpu-check-cpu), then a smoke run
# Steps: unpack .gpu (node on PATH, ./node_modules linked), find torch, nvidia-smi, CUDA
# include folders, cmake configure + build (no cmake-js: it would download headers),
# load the addon, a smoke run through src/, test/cuda/*.test.ts, bench/gpu.ts --out $OUT.
# Each step is timed and limited; a failed step is reported and the next one runs, except
# after a failed unpack, torch probe, configure, build or load. Exit status 1 when any
# step failed or ran out of time.
# Writes $OUT/gpu-check.log (everything printed) and $OUT/gpu-check.json (the steps);
# OUT defaults to a new folder in /tmp. Env: GPU_CHECK_BUDGET_S (whole run, default 470 s;
# 1500 with --cpu), GPU_CHECK_JOBS (build jobs), GPU_CHECK_DIR (where .gpu is unpacked),
# GPU_CHECK_PYTHON (the python with torch), GLOO_INCLUDE_DIR (instead of the packed Gloo
# headers), GPU_CHECK_TEST_TIMEOUT_S / GPU_CHECK_BENCH_TIMEOUT_S (those steps' caps,
# default 150 / 240 s), GPU_CHECK_BENCH_ARGS (bench/gpu.ts flags, default "--rounds 1").
# --cpu only: GPU_CHECK_CPU_TESTS (the CPU test files it runs instead of test/cuda, default
# test/random.test.ts test/collectives.test.ts), GPU_CHECK_CPU_CUDA_TESTS=1 (test/cuda too).
set -euo pipefail

MODE=gpu
case "${1:-}" in
  --cpu) MODE=cpu ;;
  '') ;;
  *) echo "usage: bash scripts/gpu-check.sh [--cpu]" >&2; exit 2 ;;
esac
if [[ ! -f scripts/gpu-check.sh || ! -f native/CMakeLists.txt ]]; then
  echo "gpu-check: run it from the repository root" >&2
  exit 2
fi
SRC_ROOT=$(pwd)

OUT=${OUT:-}
if [[ -z "$OUT" ]]; then OUT=$(mktemp -d /tmp/gpu-check-out.XXXXXX); fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/gpu-check.log
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

STATE=$(mktemp -d /tmp/gpu-check-state.XXXXXX)
: >"$STATE/env.sh"
T0=$SECONDS
STARTED=$(date -u +%FT%TZ)
FAILED=0
STOPPED=0
RESULTS=() # name|status|rc|seconds|note

if [[ $MODE == cpu ]]; then
  BUDGET_S=${GPU_CHECK_BUDGET_S:-1500}
  WORK=${GPU_CHECK_DIR:-/tmp/gpu-check-cpu-bundle}
  JOBS=${GPU_CHECK_JOBS:-2}
  NICE='nice -n 10' # the development machine has 2 cores and other work on them
  REPO=/tmp/gpu-check-cpu
  if [[ -n "${GPU_CHECK_PYTHON:-}" ]]; then PYTHON=$GPU_CHECK_PYTHON
  elif [[ -x "$SRC_ROOT/.venv/bin/python3" ]]; then PYTHON=$SRC_ROOT/.venv/bin/python3
  else PYTHON=python3; fi
else
  BUDGET_S=${GPU_CHECK_BUDGET_S:-470}
  WORK=${GPU_CHECK_DIR:-/tmp/tsddp-gpu}
  JOBS=${GPU_CHECK_JOBS:-$(nproc)}
  NICE=''
  REPO=$SRC_ROOT
  PYTHON=${GPU_CHECK_PYTHON:-python3}
fi
TEST_CAP=${GPU_CHECK_TEST_TIMEOUT_S:-150}
BENCH_CAP=${GPU_CHECK_BENCH_TIMEOUT_S:-240}
BUILD_DIR=native/build # relative to REPO; with --cpu that is the copy's, not this checkout's
export MODE SRC_ROOT OUT STATE WORK JOBS NICE REPO PYTHON BUILD_DIR
export PATH="$WORK/node/bin:$PATH"
export CCACHE_BASEDIR=$REPO # a second dry run in the same copy compiles from ccache

echo "gpu-check: mode $MODE, repo $REPO, out $OUT, budget ${BUDGET_S} s, $STARTED"
echo "gpu-check: host $(uname -n), $(nproc) CPUs, $(uname -sr)"

# ---- helpers, for the steps (each runs in its own bash under timeout) ----
setvar() { printf '%s=%q\n' "$1" "$2" >>"$STATE/env.sh"; }
note() { printf '%s' "$*" >"$STATE/note"; }
skip() { note "$*"; echo "skipped: $*"; exit 99; }
die() { note "$*"; echo "FAILED: $*"; exit 1; }
untar() { # archive dest: tar with xz or gzip, else python's tarfile (no xz binary there)
  case "$1" in
    *.tar.xz) if command -v xz >/dev/null; then tar -xJf "$1" -C "$2"; else
      "$PYTHON" -c 'import sys, tarfile
kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "$1" "$2"; fi ;;
    *.tar.gz) tar -xzf "$1" -C "$2" ;;
    *) die "unknown archive $1" ;;
  esac
}
export -f setvar note skip die untar

# ---- the steps ----
step_copy() { # --cpu only: the device tool's copy of the tree (tracked + untracked, not ignored)
  rm -rf "$REPO"
  mkdir -p "$REPO"
  (cd "$SRC_ROOT" && git ls-files -z --cached --others --exclude-standard |
    tar --null --no-recursion --ignore-failed-read -T - -cf -) | tar -xf - -C "$REPO"
  ln -s "$SRC_ROOT/.gpu" "$REPO/.gpu" # carried (git-ignored) on the GPU machine
  echo "copied $(find "$REPO" -type f | wc -l) files ($(du -sh --exclude=.gpu "$REPO" | cut -f1)) to $REPO"
}

step_unpack() {
  [[ -f .gpu/manifest.json ]] || die ".gpu/ is missing: run \`node scripts/gpu-pack.mjs\` and carry .gpu"
  rm -rf "$WORK"
  mkdir -p "$WORK"
  local f
  for f in .gpu/node.tar.* .gpu/node_modules.tar.* .gpu/gloo-include.tar.*; do
    [[ -f $f ]] || die "$f is missing: run \`node scripts/gpu-pack.mjs\` again"
  done
  untar .gpu/node.tar.* "$WORK"
  untar .gpu/node_modules.tar.* "$WORK"
  mkdir -p "$WORK/gloo-include" # an include root of its own: gloo/ only
  untar .gpu/gloo-include.tar.* "$WORK/gloo-include"
  echo ".gpu: $(du -sh -L .gpu | cut -f1) packed, $(du -sh "$WORK" | cut -f1) unpacked in $WORK"
  local want got
  want=$(sed -n 's/.*"nodeVersion": "\(v[0-9.]*\)".*/\1/p' .gpu/manifest.json)
  got=$(node --version)
  echo "node: $(command -v node) $got (packed: $want)"
  note "node $got from .gpu on PATH"
  [[ $(command -v node) == "$WORK/node/bin/node" ]] || die "node on PATH is $(command -v node), not the packed one"
  [[ $got == "$want" ]] || die "the packed node says $got, the manifest $want"
  if [[ -L node_modules && ! -e node_modules ]]; then rm node_modules; fi # a stale link
  if [[ -e node_modules ]]; then
    echo "node_modules: using the existing $(readlink -f node_modules)"
  else
    ln -s "$WORK/node_modules" node_modules
    echo "node_modules: linked to $WORK/node_modules ($(ls "$WORK/node_modules" | tr '\n' ' '))"
  fi
  setvar NODE_INCLUDE "$WORK/node/include/node"
  setvar GLOO_ROOT "${GLOO_INCLUDE_DIR:-$WORK/gloo-include}"
}

step_torch() {
  "$PYTHON" - >"$STATE/torch.txt" <<'EOF'
import os, shlex, torch
cuda = torch.version.cuda or ""
vals = {
    "TORCH_DIR": os.path.dirname(torch.__file__),
    "TORCH_ABI": str(int(torch._C._GLIBCXX_USE_CXX11_ABI)),
    "TORCH_VERSION": torch.__version__,
    "TORCH_CUDA": cuda,
    "TORCH_CUDA_AVAILABLE": str(int(torch.cuda.is_available())),
    "TORCH_NCCL": ".".join(map(str, torch.cuda.nccl.version())) if cuda else "",
}
for k, v in vals.items():
    print(f"{k}={shlex.quote(v)}")
EOF
  cat "$STATE/torch.txt"
  cat "$STATE/torch.txt" >>"$STATE/env.sh"
  source "$STATE/torch.txt"
  echo "python: $PYTHON ($("$PYTHON" --version 2>&1))"
  [[ -f $TORCH_DIR/lib/libtorch.so ]] || die "no lib/libtorch.so in $TORCH_DIR"
  if [[ $MODE == gpu ]]; then
    [[ -n $TORCH_CUDA ]] || die "torch $TORCH_VERSION is not a CUDA build"
    [[ -f $TORCH_DIR/lib/libtorch_cuda.so ]] || die "no lib/libtorch_cuda.so in $TORCH_DIR"
    [[ $TORCH_CUDA_AVAILABLE == 1 ]] || die "torch.cuda.is_available() is False"
  fi
  note "torch $TORCH_VERSION, cxx11 abi $TORCH_ABI${TORCH_CUDA:+, CUDA $TORCH_CUDA, NCCL $TORCH_NCCL}"
}

step_gpu_info() {
  [[ $MODE == gpu ]] || skip "no GPU with --cpu"
  command -v nvidia-smi >/dev/null || die "nvidia-smi is not on PATH"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv
  nvidia-smi >"$STATE/smi.txt" # not piped to head: SIGPIPE would fail the step
  head -n 12 "$STATE/smi.txt"
  note "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  if command -v nvcc >/dev/null; then nvcc --version | tail -n 2; fi
}

step_cuda_include() {
  [[ $MODE == gpu ]] || skip "TSDDP_CUDA=OFF with --cpu"
  local site dirs=() d
  site=$(dirname "$TORCH_DIR")
  # The nvidia-* wheels beside torch: nvidia/cu13/include (CUDA 13's runtime, cuBLAS,
  # cuSPARSE, cuSOLVER), nvidia/nccl/include; older ones nvidia/<lib>/include.
  if [[ -d $site/nvidia ]]; then
    while IFS= read -r d; do dirs+=("$d"); done < <(find "$site/nvidia" -maxdepth 3 -type d -name include | sort)
  fi
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [[ -n $d && -f $d/include/cuda_runtime_api.h ]]; then dirs+=("$d/include"); break; fi
  done
  ((${#dirs[@]} > 0)) || die "no CUDA include folder under $site/nvidia nor /usr/local/cuda"
  local joined
  joined=$(IFS=';'; echo "${dirs[*]}")
  printf 'include: %s\n' "${dirs[@]}"
  local h missing=()
  for h in cuda_runtime_api.h nccl.h cublas_v2.h cusparse.h cusolverDn.h; do
    local where=''
    for d in "${dirs[@]}"; do if [[ -f $d/$h ]]; then where=$d; break; fi; done
    echo "  $h: ${where:-NOT FOUND}"
    [[ -n $where ]] || missing+=("$h")
  done
  if [[ -f scripts/lib/cuda.mjs ]]; then # what setup.mjs would pass, for comparison
    echo "scripts/lib/cuda.mjs says: $(node --input-type=module -e "
      const m = await import('$REPO/scripts/lib/cuda.mjs');
      console.log(m.cudaIncludeDirs('$TORCH_DIR').join(';'))" 2>&1)"
  fi
  ((${#missing[@]} == 0)) || die "missing headers: ${missing[*]}"
  setvar CUDA_INCLUDE "$joined"
  note "${#dirs[@]} include folders"
}

step_configure() {
  local gen=Ninja cuda=OFF
  command -v ninja >/dev/null || gen='Unix Makefiles'
  [[ $MODE == gpu ]] && cuda=ON
  # A build folder configured by cmake-js (Unix Makefiles) or another generator: start over.
  if [[ -f $BUILD_DIR/CMakeCache.txt ]] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=$gen" "$BUILD_DIR/CMakeCache.txt"; then
    echo "removing $BUILD_DIR (configured with another generator)"
    rm -rf "$BUILD_DIR"
  fi
  [[ -f $GLOO_ROOT/gloo/algorithm.h ]] || die "no gloo/algorithm.h in $GLOO_ROOT"
  # What cmake-js passes on Linux (scripts/lib/addons.mjs), with Node's headers from .gpu:
  # CMAKE_JS_INC, an empty CMAKE_JS_SRC/LIB, -DBUILDING_NODE_EXTENSION, the output folder
  # Release/ that src/core/native.ts loads from, and the Gloo include root as a standard
  # include folder. node-addon-api is found by CMakeLists.txt itself (node -p, on PATH).
  local args=(
    -S native -B "$BUILD_DIR" -G "$gen" --no-warn-unused-cli
    -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=$REPO/$BUILD_DIR/Release"
    "-DCMAKE_JS_INC=$NODE_INCLUDE" -DCMAKE_JS_SRC= -DCMAKE_JS_LIB=
    -DCMAKE_CXX_FLAGS=-DBUILDING_NODE_EXTENSION
    "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$GLOO_ROOT"
    "-DTORCH_DIR=$TORCH_DIR" "-DTORCH_CXX11_ABI=$TORCH_ABI"
    "-DTSDDP_CUDA=$cuda" "-DTSDDP_CUDA_INCLUDE=${CUDA_INCLUDE:-}"
  )
  echo "cmake ${args[*]}"
  cmake "${args[@]}"
  note "$gen, TSDDP_CUDA=$cuda"
}

step_build() {
  $NICE cmake --build "$BUILD_DIR" -j "$JOBS"
  [[ -f $BUILD_DIR/Release/tsddp.node ]] || die "$BUILD_DIR/Release/tsddp.node was not built"
  ls -la "$BUILD_DIR"/Release/*.node
  note "$(du -h "$BUILD_DIR/Release/tsddp.node" | cut -f1) tsddp.node$([[ -f $BUILD_DIR/Release/tsddp_image.node ]] && echo ' + tsddp_image.node' || echo ', no tsddp_image.node (no libjpeg headers)')"
}

step_load() { # the addon alone, in a child: a dlopen error is reported, not a crash
  node -e "
    const a = require('$REPO/$BUILD_DIR/Release/tsddp.node');
    const i = a.buildInfo();
    console.log(JSON.stringify(i, null, 1));
    const gpu = process.argv[1] === 'gpu';
    if (gpu && i.cudaBuilt === false) throw new Error('the addon was built without its CUDA part');
    if (gpu && !i.cudaAvailable) throw new Error('the addon sees no CUDA device');
    require('fs').writeFileSync('$STATE/note', 'torch ' + i.torchVersion + ', cudaAvailable ' + i.cudaAvailable +
      ', ' + i.cudaDeviceCount + ' device(s), cudaBuilt ' + i.cudaBuilt);
  " "$MODE"
}

step_smoke() { # through src/ and tsx, as the tests and benches load it
  cat >"$STATE/smoke.mjs" <<EOF
const t = await import('$REPO/src/index.ts');
const info = t.buildInfo();
const devices = ['cpu', ...(t.cuda.isAvailable() ? ['cuda'] : [])];
const out = { node: process.version, torch: info.torchVersion, cudaDevices: t.cuda.deviceCount() };
for (const device of devices) {
  const a = t.tensor([[1, 2], [3, 4]]).to(device);
  const s = a.matmul(a).sum().item(); // [[7, 10], [15, 22]]
  if (s !== 54) throw new Error(\`matmul on \${device}: sum \${s}, expected 54\`);
  out[device] = s;
}
console.log(JSON.stringify(out));
if ('$MODE' === 'gpu' && !out.cuda) throw new Error('no CUDA device through src/');
EOF
  node --import tsx "$STATE/smoke.mjs"
  note "src/ loads; matmul on $([[ $MODE == gpu ]] && echo 'cpu and cuda' || echo cpu)"
}

step_tests() {
  shopt -s nullglob
  local files=(test/cuda/*.test.ts) f
  if [[ $MODE == cpu && ${GPU_CHECK_CPU_CUDA_TESTS:-0} != 1 ]]; then
    # The CUDA tests fail without a GPU: check the test runner (tsx, the packed node_modules,
    # a 2-process Gloo group over the packed Gloo headers) on CPU test files instead.
    echo "--cpu: ${#files[@]} test/cuda files left out (GPU_CHECK_CPU_CUDA_TESTS=1 runs them)"
    files=()
    for f in ${GPU_CHECK_CPU_TESTS:-test/random.test.ts test/collectives.test.ts}; do
      if [[ -f $f ]]; then files+=("$f"); fi
    done
  fi
  ((${#files[@]} > 0)) || skip "no test/cuda/*.test.ts"
  echo "${#files[@]} files: ${files[*]}"
  local rc=0
  node --import tsx --test --test-concurrency=1 --test-reporter=spec "${files[@]}" 2>&1 |
    tee "$STATE/tests.txt" || rc=$?
  local count k
  count=$(for k in tests pass fail skipped cancelled; do
    printf '%s %s, ' "$(sed -n "s/^ℹ $k \([0-9]*\)$/\1/p" "$STATE/tests.txt" | tail -n 1)" "$k"
  done)
  note "${#files[@]} files: ${count%, }"
  return "$rc"
}

step_bench() {
  [[ -f bench/gpu.ts ]] || skip "no bench/gpu.ts"
  [[ $MODE == gpu ]] || skip "bench/gpu.ts needs a GPU"
  # shellcheck disable=SC2086 # GPU_CHECK_BENCH_ARGS is split into words on purpose
  node --import tsx bench/gpu.ts --out "$OUT" ${GPU_CHECK_BENCH_ARGS:---rounds 1}
}
export -f step_copy step_unpack step_torch step_gpu_info step_cuda_include step_configure step_build \
  step_load step_smoke step_tests step_bench

# ---- the runner ----
# run_step NAME CAP_S FATAL: runs step_NAME in a child bash (set -e applies inside it)
# under timeout, limited to what is left of the budget; records status and seconds.
run_step() {
  local name=$1 cap=$2 fatal=$3
  if ((STOPPED)); then
    RESULTS+=("$name|not run|-|0|an earlier step failed")
    return 0
  fi
  local left=$((BUDGET_S - (SECONDS - T0) - 5))
  local limit=$((cap < left ? cap : left))
  if ((limit < 5)); then
    echo "==== [$name] not run: the ${BUDGET_S} s budget is spent"
    RESULTS+=("$name|timeout|-|0|no time left")
    FAILED=1
    return 0
  fi
  echo
  echo "==== [$name] at +$((SECONDS - T0)) s, limit ${limit} s"
  rm -f "$STATE/note"
  local t0=$EPOCHREALTIME rc=0
  timeout --kill-after=10 "$limit" bash -c "set -euo pipefail; set -a; source '$STATE/env.sh'; set +a; step_${name//-/_}" || rc=$?
  local secs
  secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  local note='' status
  [[ -f $STATE/note ]] && note=$(tr '\n|' '  ' <"$STATE/note")
  case $rc in
    0) status=ok ;;
    99) status=skipped ;;
    124 | 137) status=timeout note="killed after ${limit} s${note:+; $note}" ;;
    *) status=failed ;;
  esac
  if [[ $status == timeout || $status == failed ]]; then
    FAILED=1
    if [[ $fatal == fatal ]]; then STOPPED=1; fi
  fi
  RESULTS+=("$name|$status|$rc|$secs|$note")
  echo "==== [$name] $status in ${secs} s${note:+: $note}"
  set -a
  source "$STATE/env.sh"
  set +a
}

if [[ $MODE == cpu ]]; then
  run_step copy 120 fatal
  if ((!STOPPED)); then cd "$REPO"; fi
fi
run_step unpack 90 fatal
run_step torch 60 fatal
run_step gpu-info 30 go-on
run_step cuda-include 30 fatal
run_step configure 120 fatal
run_step build 420 fatal
run_step load 60 fatal
run_step smoke 90 go-on
run_step tests "$TEST_CAP" go-on
run_step bench "$BENCH_CAP" go-on

# ---- summary ----
json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "${s//$'\t'/ }"; }
TOTAL=$((SECONDS - T0))
echo
echo "==== summary ($MODE, ${TOTAL} s)"
printf '%-13s %-8s %7s  %s\n' step status seconds note
{
  printf '{\n  "mode": %s,\n  "host": %s,\n  "startedAt": %s,\n  "seconds": %s,\n  "ok": %s,\n' \
    "$(json_str "$MODE")" "$(json_str "$(uname -n)")" "$(json_str "$STARTED")" "$TOTAL" \
    "$([[ $FAILED == 0 ]] && echo true || echo false)"
  printf '  "torch": %s,\n  "node": %s,\n  "steps": [\n' "$(json_str "${TORCH_VERSION:-}")" \
    "$(json_str "$(command -v node >/dev/null && node --version || echo)")"
  sep=''
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r name status rc secs note <<<"$r"
    printf '%-13s %-8s %7s  %s\n' "$name" "$status" "$secs" "$note" >&3
    printf '%s    {"step": %s, "status": %s, "rc": %s, "seconds": %s, "note": %s}' "$sep" \
      "$(json_str "$name")" "$(json_str "$status")" "$(json_str "$rc")" "$secs" "$(json_str "$note")"
    sep=$',\n'
  done
  printf '\n  ]\n}\n'
} 3>&1 >"$OUT/gpu-check.json"
echo "wrote $OUT/gpu-check.log and $OUT/gpu-check.json"
if ((FAILED)); then echo "gpu-check: FAILED"; else echo "gpu-check: ok"; fi
rm -rf "$STATE"
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null || true
exit "$FAILED"
