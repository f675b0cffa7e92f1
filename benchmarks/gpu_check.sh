#!/usr/bin/env bash
# The checks that need a CUDA device, in one go (a lent GPU machine's time is short). From the
# project root of a machine with CUDA, torch and lightning, after the wheels of
# ../shared/tools/gpu-wheels:  source .whl/setup.sh && bash benchmarks/gpu_check.sh
# It runs the gpu-marked tests (tiny image and text audits on CUDA, CUDA losses against the
# CPU's) and the paper-scale throughput table on the GPU; logs go to $OUT (or /tmp/gpu-check).
set -uo pipefail
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
python=$(python3 -c 'import sys; print(sys.executable)')
script="$(dirname "$python")/panoramia-audit"  # the tests start the installed console script
if [ ! -x "$script" ]; then
  printf '#!/bin/sh\nexec %s -m panoramia.pipeline.app "$@"\n' "$python" > "$script"
  chmod +x "$script"
fi
nvidia-smi -L
python3 -c 'import torch, lightning; print("torch", torch.__version__, "lightning",
lightning.__version__, torch.cuda.get_device_name())'
timeout "${TESTS_TIMEOUT:-300}" python3 -m pytest -m gpu -p no:cacheprovider -q -rs \
  --durations=5 tests/pipeline/test_multi_device_audits.py tests/targets/test_devices.py \
  2>&1 | tee "$out/gpu_tests.log"
timeout "${BENCH_TIMEOUT:-200}" python3 benchmarks/paper_scale.py --device cuda --batches 20 \
  2>&1 | tee "$out/paper_scale.log"
