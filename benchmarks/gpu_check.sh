#!/usr/bin/env bash
# The checks that need a CUDA device, in one go (a lent GPU machine's time is short). From the
# project root of a machine with CUDA, torch and lightning, after the wheels of
#   EXTRA="pydantic pydantic_core annotated-types typing-inspection" ../shared/tools/gpu-wheels
# (the report's typed sections need pydantic, which the tool's list predates):
#   source .whl/setup.sh && bash benchmarks/gpu_check.sh
# In order of what matters (each part under its own time limit, logs to $OUT or /tmp/gpu-check):
#  1. the paper-scale throughput table, each stage through the audit's own code
#     (benchmarks/paper_scale.py, with the WRN also timed with deterministic=False);
#  2. the gpu-marked tests (tiny image and text audits on CUDA, CUDA losses against the CPU's);
#  3. the three demo audits on the GPU (tables: `make demo`'s two targets; images and text: the
#     default audit of one target), each timed from a fresh store.
set -uo pipefail
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
python=$(python3 -c 'import sys; print(sys.executable)')
script="$(dirname "$python")/panoramia-audit"  # the tests start the installed console script
if [ ! -x "$script" ] && ! printf '#!/bin/sh\nexec %s -m panoramia.pipeline.app "$@"\n' "$python" > "$script" 2>/dev/null; then
  script=/tmp/bin/panoramia-audit
  mkdir -p /tmp/bin && printf '#!/bin/sh\nexec %s -m panoramia.pipeline.app "$@"\n' "$python" > "$script"
  export PATH=/tmp/bin:$PATH
fi
chmod +x "$script"
{ nvidia-smi -L; python3 -c 'import torch, lightning, transformers; print("torch", torch.__version__,
"lightning", lightning.__version__, "transformers", transformers.__version__, torch.cuda.get_device_name())'
} 2>&1 | tee "$out/device.log"
bench() {
  timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/paper_scale.py --device cuda \
    --batches "${BENCH_BATCHES:-40}" --calls 3 --compare-determinism 2>&1 | tee "$out/paper_scale.log"
}
tests() {
  timeout "${TESTS_TIMEOUT:-150}" python3 -m pytest -m gpu -p no:cacheprovider -q -rs -n 0 \
    --durations=5 tests/pipeline/test_multi_device_audits.py tests/targets/test_devices.py \
    2>&1 | tee "$out/gpu_tests.log"
}
demo() {  # name, limit, arguments...: one audit from a fresh store, its wall time
  local name=$1 limit=$2; shift 2
  local started=$SECONDS
  PANORAMIA_HOME=$(mktemp -d) timeout "$limit" python3 -m panoramia.pipeline.app "$@" \
    hydra.run.dir="/tmp/demo-$name" hydra.sweep.dir="/tmp/demo-$name" > "$out/demo_$name.log" 2>&1
  echo "demo $name: exit $?, $((SECONDS - started)) s wall: $*" | tee -a "$out/demos.log"
  grep -E "verdict|report: |Leak|leak" "$out/demo_$name.log" | tail -4
}
demos() {  # DEMOS_AT_ONCE=1: the three side by side (a short loan), with the GPU's load sampled
  local at_once=${DEMOS_AT_ONCE:-0} sampler=
  if [ "$at_once" = 1 ]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 \
      > "$out/gpu_load.csv" 2>&1 & sampler=$!
  fi
  run() { if [ "$at_once" = 1 ]; then "$@" & else "$@"; fi; }
  run demo tables "${DEMO_TABLES_TIMEOUT:-150}" -m target=mlp_generalised,mlp_overfit
  run demo images "${DEMO_IMAGES_TIMEOUT:-200}" --config-name image target=cnn_overfit
  run demo text "${DEMO_TEXT_TIMEOUT:-200}" --config-name text target=gpt2_many_epochs
  wait $(jobs -p | grep -vx "${sampler:-none}") 2>/dev/null
  if [ -n "$sampler" ]; then kill "$sampler"; fi
}
for part in ${PARTS:-bench tests demos}; do "$part"; done  # PARTS: a subset, in another order
