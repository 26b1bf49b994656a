#!/usr/bin/env bash
# The GPU check of the handoff probes: one command, one summary, one measured profile.
#
#   bench/device_check.sh OUT_DIR [--quick]
#
# On a GPU machine with torch (CUDA) installed and no internet it runs, each under its
# own time limit (the whole well under 8 minutes):
#   1. learnsched probe nvml                        (NVML: memory, processes, clocks)
#   2. learnsched probe lora --device cuda --shape paper        (the paper's ~13.2 MB)
#   3. learnsched probe lora --device cuda --shape llama-3.1-8b (8B shapes)
#   4. bench/gpu_handoff.py   (LoRA, release latency to the driver and on exit, NVML cost)
#   5. learnsched probe recovery against the simulated engine holding real CUDA memory,
#      vLLM (tagged, level 1) and SGLang, confirmed through NVML by the GPU's UUID
#   6. the gpu-marked tests
# and writes OUT_DIR/summary.md, OUT_DIR/summary.json, OUT_DIR/profile.json (the
# measured LoRA costs of this GPU), each step's output and log.
#
# Exit status: 0 all steps passed; 1 a step failed (the summary names it); 3 no usable
# GPU or learnsched cannot be imported or built here (one line says which).
# PYTHON picks the interpreter (default python3); GPU picks torch's device (default 0);
# WHEELHOUSE, a folder of wheels (nvidia-ml-py, safetensors) to install offline first;
# BUDGET_S, the seconds all steps may take together (default 450).
set -u -o pipefail

die() { echo "device_check: $2" >&2; exit "$1"; }

[ $# -ge 1 ] || die 2 "usage: bench/device_check.sh OUT_DIR [--quick]"
OUT=$(mkdir -p "$1" && cd "$1" && pwd) || die 2 "cannot create $1"
QUICK=0
[ "${2:-}" = "--quick" ] && QUICK=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
GPU=${GPU:-0}
WORK=$(mktemp -d)  # run outside the source tree: the flat layout would shadow the package
trap 'rm -rf "$WORK"' EXIT
STARTED=$(date +%s)

command -v "$PY" >/dev/null || die 3 "no $PY on PATH (set PYTHON)"
command -v nvidia-smi >/dev/null || die 3 "no GPU: nvidia-smi not found (no NVIDIA driver here)"
(cd "$WORK" && "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)") \
    2>/dev/null || die 3 "no GPU: torch is missing or torch.cuda.is_available() is False"

# learnsched: installed already, or built from this tree without the network.
if ! (cd "$WORK" && "$PY" -c "import learnsched._core") 2>/dev/null; then
    echo "device_check: building learnsched from $REPO (no network)" >&2
    if ! "$PY" -m pip install -q --no-index --no-build-isolation --no-deps "$REPO" \
        >"$OUT/build.log" 2>&1; then
        (cd "$REPO" && "$PY" setup.py build_ext --inplace) >>"$OUT/build.log" 2>&1 \
            || die 3 "learnsched cannot be built here (see $OUT/build.log: needs pybind11, Cython, a C++17 compiler)"
        export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
    fi
fi

# The gpu extra's other packages, from a local wheel folder if one is given (no network).
if [ -n "${WHEELHOUSE:-}" ]; then
    "$PY" -m pip install -q --no-index --find-links "$WHEELHOUSE" nvidia-ml-py safetensors \
        >>"$OUT/build.log" 2>&1 || echo "device_check: some wheels missing in $WHEELHOUSE" >&2
fi

# torch's cuda:$GPU by UUID: NVML's indices ignore CUDA_VISIBLE_DEVICES, UUIDs do not.
UUID=$(cd "$WORK" && "$PY" - "$GPU" <<'EOF'
import sys, torch
from learnsched.handoff.nvml import device_for_torch
index = int(sys.argv[1])
print(device_for_torch(index, str(torch.cuda.get_device_properties(index).uuid)).uuid)
EOF
) || UUID=""
[ -n "$UUID" ] || echo "device_check: NVML does not see torch's cuda:$GPU; NVML steps will fail" >&2

RUNS=20; RUNS_8B=10; WARM=3; ENGINE_MIB=2048; GIB=4
if [ "$QUICK" = 1 ]; then RUNS=5; RUNS_8B=3; WARM=1; ENGINE_MIB=512; GIB=1; fi

printf 'step\tstatus\tseconds\n' >"$OUT/steps.tsv"
FAILED=0
BUDGET_S=${BUDGET_S:-450}  # every step together, so the whole stays under 8 minutes
# step NAME LIMIT_S COMMAND...: stdout to NAME.out, stderr to NAME.log, one line to steps.tsv.
# A step gets at most what is left of the budget; none is started with under 10 s left.
step() {
    local name=$1 limit=$2 start status left
    shift 2
    start=$(date +%s)
    left=$(( BUDGET_S - (start - STARTED) ))
    if [ "$left" -lt 10 ]; then
        printf '%s\tskipped: out of time (budget %s s)\t0\n' "$name" "$BUDGET_S" >>"$OUT/steps.tsv"
        FAILED=1
        return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    echo "device_check: $name ..." >&2
    (cd "$WORK" && timeout --kill-after=10 "$limit" "$@") >"$OUT/$name.out" 2>"$OUT/$name.log"
    status=$?
    [ $status -eq 124 ] && echo "timed out after $limit s" >>"$OUT/$name.log"
    [ $status -ne 0 ] && FAILED=1
    printf '%s\t%s\t%s\n' "$name" "$status" "$(( $(date +%s) - start ))" >>"$OUT/steps.tsv"
}

CLI=("$PY" -m learnsched)
ENGINE=("$PY" -m learnsched.testing.engine --device "cuda:$GPU" --weights-mib "$ENGINE_MIB"
        --kv-mib "$ENGINE_MIB" --resident-mib 256 --lifetime 300)

step nvml 30 "${CLI[@]}" probe nvml --gpu "${UUID:-$GPU}" --json
step lora-paper 45 "${CLI[@]}" probe lora --device "cuda:$GPU" --shape paper --runs "$RUNS" \
    --json --out "$OUT/profile.json"
step lora-8b 75 "${CLI[@]}" probe lora --device "cuda:$GPU" --shape llama-3.1-8b \
    --runs "$RUNS_8B" --json
step gpu-handoff 100 "$PY" "$REPO/bench/gpu_handoff.py" --gpu "$GPU" --gib "$GIB" \
    --runs "$RUNS" --json
for dialect in vllm sglang; do
    port=$(cd "$WORK" && "$PY" -c "from learnsched.testing import free_port; print(free_port())")
    tags=()
    [ "$dialect" = vllm ] && tags=(--tags weights kv_cache)
    step "sim-$dialect" 60 "${CLI[@]}" probe recovery --engine "$dialect" \
        --url "http://127.0.0.1:$port" --launch "${ENGINE[*]} --dialect $dialect --port $port" \
        --gpu "${UUID:-$GPU}" --warm-runs "$WARM" --parked-s 0.2 --timeout-s 60 "${tags[@]}" \
        --json --out "$OUT/sim-$dialect-profile.json"
done
if (cd "$WORK" && "$PY" -c "import pytest") 2>/dev/null; then
    mapfile -t GPU_TESTS < <(grep -l "mark.gpu" "$REPO"/tests/test_*.py)
    step gpu-tests 80 "$PY" -m pytest -q -m gpu -p no:cacheprovider --rootdir "$REPO" \
        -c "$REPO/pyproject.toml" "${GPU_TESTS[@]}"
else
    printf 'gpu-tests\tskipped: pytest is not installed\t0\n' >>"$OUT/steps.tsv"
fi

(cd "$WORK" && "$PY" "$REPO/bench/device_summary.py" "$OUT" "$(( $(date +%s) - STARTED ))") \
    || FAILED=1
exit $FAILED
