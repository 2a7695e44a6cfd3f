#!/usr/bin/env bash
# Runs stages of hx's checks and benchmarks on a GPU machine whose Python already has jax (CUDA), flax,
# optax, chex, absl-py, numpy, pytest and torch (CUDA), but not mlxtend: its wheel travels in .whl/
# (see benchmarks/RESULTS.md, "On a GPU"). Output goes under $OUT (default ./out/gpu).
#
#     bash benchmarks/on_gpu.sh env tests throughput transfer synthesis
#
# Stages:
#   env         the GPU, the CPU, and the versions of Python's packages
#   tests       the fast suite (-m "not slow") on the GPU backend, 8 pytest-xdist workers sharing the GPU
#   slow        the slow suite likewise
#   throughput  benchmarks/train_throughput.py --peer on the GPU, torch on the same GPU
#   cputhroughput  the same on 2 of the machine's CPU cores (JAX_PLATFORMS=cpu), torch's CPU threads
#   transfer    benchmarks/studies/transfer_candidate.py on the GPU
#   synthesis   benchmarks/synthesis.py, CS1 task 3 at the quick preset, halving against full, cold then warm
#   reproduce   benchmarks/reproduce.py resumed from the committed records of REPRODUCE_SEQUENCES
#               (e.g. gs1,gs2) at REPRODUCE_FRACTIONS (default 0.02) and REPRODUCE_SEEDS (default 0) in
#               REPRODUCE_DIR (default benchmarks/reproduction), for at most REPRODUCE_SECONDS (default 480),
#               full MNIST from MNIST (a path; carry it in an ignored folder: it is never committed). Bad
#               settings, or a reproduce.py that refuses its flags, end the script with exit 1. It runs on a copy
#               under /tmp; $OUT/reproduction.tgz brings back those sequences' folders without weights
#               (records, reports, settings, kept candidates: what git keeps). Here:
#                 git rm -rq --ignore-unmatch DIR/SEQ...; tar xzf reproduction.tgz -C DIR
#               then commit. A run cut short resumes from its kept candidates, on a GPU or a CPU.
#               With REPRODUCE_WEIGHTS=1 it also brings back the weights the next call resumes from (see
#               weights), so that the next call, carrying them, does not train the recorded winners again.
#   weights     packs the latest library and network of every method and instantiation of
#               REPRODUCE_SEQUENCES in REPRODUCE_DIR (`*/seed_*/libraries/after_NN` and `networks/after_NN`,
#               the largest NN of each: what a resumed run loads instead of training a recorded task's winner
#               or network again) and every non-empty `*/seed_*/checkpoints` folder (a candidate or network
#               cut short mid-training, e.g. GS2's 1,000-epoch regressor, resumes from it on the next call;
#               a checkpoint's key names a fresh start by its seed, so one made on a CPU can resume on a
#               GPU, not yet tried there) into $OUT/weights.tgz.00, .01, ... (parts of
#               REPRODUCE_WEIGHTS_PART bytes, default 15M: a lent machine brings back files of 16 MiB at
#               most; one checkpoint of GS2's regressor is 18 MB). Here:
#                 cat weights.tgz.* | tar xzf - -C DIR
#               and name those folders in the next call's carry (they are ignored by git: never committed).
set -u
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export HX_COMPILATION_CACHE_DIR=${HX_COMPILATION_CACHE_DIR:-/tmp/hx_jax_cache}
# Several processes (xdist workers; JAX beside torch) share the one GPU.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

stage_env() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)"
  python3 - <<'EOF'
import platform, jax, jaxlib, flax, optax, chex, numpy, torch
print("python", platform.python_version(), "jax", jax.__version__, "jaxlib", jaxlib.__version__,
      "flax", flax.__version__, "optax", optax.__version__, "chex", chex.__version__,
      "numpy", numpy.__version__, "torch", torch.__version__)
print("devices", jax.devices(), "backend", jax.default_backend())
EOF
}

stage_tests() {
  timeout "${TESTS_TIMEOUT:-330}" python3 -m pytest -m "not slow" -n 8 -q -p no:cacheprovider \
    --durations=15 -W ignore::DeprecationWarning 2>&1 | tee "$OUT/tests.log" | tail -60
}

stage_slow() {
  timeout "${TESTS_TIMEOUT:-330}" python3 -m pytest -m slow -n 8 -q -p no:cacheprovider \
    --durations=15 2>&1 | tee "$OUT/slow.log" | tail -60
}

stage_throughput() {
  python3 benchmarks/train_throughput.py --peer --peer_device cuda --threads 0 --epochs 5 --rounds 2 \
    --json "$OUT/throughput_gpu.json" 2>&1 | tail -45
}

stage_cputhroughput() {
  JAX_PLATFORMS=cpu python3 benchmarks/train_throughput.py --peer --threads 2 --epochs 3 \
    --json "$OUT/throughput_cpu2.json" 2>&1 | tail -45
}

stage_transfer() {
  python3 benchmarks/studies/transfer_candidate.py --threads 0 --epochs 5 --json "$OUT/transfer_gpu.json" 2>&1 | tail -30
}

stage_synthesis() {
  # Twice: the first run fills the persistent compilation cache (its schedules' figures are then skewed
  # by which ran first); the second's figures are the warm ones.
  for run in cold warm; do
    python3 benchmarks/synthesis.py --task cs1:3 --preset quick --candidates 20 --epochs 20 \
      --executors local --schedules halving,full --halving_first 2 --library_dir /tmp/hx_libraries \
      --json "$OUT/synthesis_gpu_$run.json" 2>&1 | tail -12
  done
}

stage_reproduce() {
  local dir=${REPRODUCE_DIR:-benchmarks/reproduction} sequences=${REPRODUCE_SEQUENCES:-}
  # Bad settings: one line and exit 1, before anything is copied or trained.
  local problem=""
  if [ -z "$sequences" ]; then problem="REPRODUCE_SEQUENCES must name the sequences (e.g. gs1,gs2)"
  elif [ ! -d "$dir" ]; then problem="REPRODUCE_DIR $dir is not a directory"
  elif [ ! -f "${MNIST:-}" ]; then problem="MNIST must name the full MNIST pickle (got '${MNIST:-}')"
  fi
  if [ -n "$problem" ]; then
    echo "reproduce: $problem" >&2
    exit 1
  fi
  rm -rf /tmp/hx_reproduction && mkdir -p /tmp/hx_reproduction && cp -r "$dir"/. /tmp/hx_reproduction/
  timeout -s TERM "${REPRODUCE_SECONDS:-480}" python3 benchmarks/reproduce.py --mnist "$MNIST" \
    --sequences "$sequences" --seeds "${REPRODUCE_SEEDS:-0}" --fractions "${REPRODUCE_FRACTIONS:-0.02}" \
    --output_dir /tmp/hx_reproduction 2>&1 | tee "$OUT/reproduce.log" | tail -40
  local rc=${PIPESTATUS[0]}
  # 124: stopped at REPRODUCE_SECONDS, its finished candidates kept; any other failure (a refused flag,
  # settings that differ from the committed run's) has nothing to bring back.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    echo "reproduce: reproduce.py failed (exit $rc); see $OUT/reproduce.log" >&2
    exit 1
  fi
  local folders
  folders=$(cd /tmp/hx_reproduction && for s in ${sequences//,/ }; do [ -d "$s" ] && echo "$s"; done)
  # What .gitignore keeps out (weights, libraries, checkpoints) stays behind: tens of MB a task.
  (cd /tmp/hx_reproduction && tar czf "$OUT/reproduction.tgz" --exclude=checkpoints --exclude=libraries \
    --exclude=networks $folders)
  ls -l "$OUT/reproduction.tgz"
  if [ "${REPRODUCE_WEIGHTS:-0}" = 1 ]; then
    pack_weights /tmp/hx_reproduction "$folders"
  fi
}

# pack_weights ROOT FOLDERS: the latest after_NN of each libraries/ and networks/ folder two levels under
# each of FOLDERS (relative to ROOT), and each checkpoints/ folder there that holds a file, into
# $OUT/weights.tgz.NN parts; nothing when there is none.
pack_weights() {
  local root=$1 folders=$2 latest
  latest=$(cd "$root" && for s in $folders; do
    for d in "$s"/*/seed_*/libraries "$s"/*/seed_*/networks; do
      [ -d "$d" ] && find "$d" -mindepth 1 -maxdepth 1 -type d -name 'after_*' | sort | tail -n 1
    done
    for d in "$s"/*/seed_*/checkpoints; do
      [ -d "$d" ] && [ -n "$(find "$d" -type f -print -quit)" ] && echo "$d"
    done
  done)
  if [ -z "$latest" ]; then
    echo "weights: no libraries, networks or checkpoints under $root ($folders)"
    return 0
  fi
  rm -f "$OUT"/weights.tgz.*
  # shellcheck disable=SC2086  # one path a word: the folders' names have no spaces
  (cd "$root" && tar czf - $latest) | split -b "${REPRODUCE_WEIGHTS_PART:-15M}" -d - "$OUT/weights.tgz."
  echo "weights: $(echo "$latest" | wc -l) folders"
  ls -l "$OUT"/weights.tgz.*
}

stage_weights() {
  local dir=${REPRODUCE_DIR:-benchmarks/reproduction} sequences=${REPRODUCE_SEQUENCES:-}
  if [ -z "$sequences" ]; then echo "weights: REPRODUCE_SEQUENCES must name the sequences (e.g. gs1,gs2)" >&2; exit 1; fi
  if [ ! -d "$dir" ]; then echo "weights: REPRODUCE_DIR $dir is not a directory" >&2; exit 1; fi
  local folders
  folders=$(cd "$dir" && for s in ${sequences//,/ }; do [ -d "$s" ] && echo "$s"; done)
  pack_weights "$dir" "$folders"
}

for stage in "$@"; do
  echo "=== $stage $(date -u +%H:%M:%S)"
  "stage_$stage"
done
echo "=== done $(date -u +%H:%M:%S)"
