#!/usr/bin/env bash
# A validity judgement on one lent GPU (docs/SPEC.md §3.1), within a short loan: the leaking
# target's runs and its control's runs as two multiruns side by side, each with its own stage store
# (no stage is shared between them, so neither waits on nor races the other; the seed-independent
# stages are built twice, which the GPU's idle half absorbs). From the project root, after
#   source .whl/setup.sh
#   CONFIG=image LEAKING=cnn_overfit CONTROL=cnn_disjoint GEN=303 SEEDS=0,1,2,3,4 \
#     bash benchmarks/gpu_judgement.sh [extra settings ...]
# CONFIG, LEAKING and CONTROL default to the text audit's gpt2_many_epochs and gpt2_disjoint; the
# extra settings go to both halves. TARGETS="a b c d" runs one part a target instead (each its own
# store, /tmp/stores/<part>, kept for a second call on the same machine; all side by side; THREADS
# torch threads each; TAG names a call's sweep folders), e.g. both text families and their
# controls, the new attack first, then the rule before on the stages the first call built:
#   CONFIG=text TARGETS="gpt2_many_epochs gpt2_disjoint lora_many_epochs lora_disjoint" THREADS=3 \
#     GEN=302 SEEDS=0,1,2 TAG=calibrated bash benchmarks/gpu_judgement.sh text_attack=calibrated
#   ... TAG=paper LIMIT=120 bash benchmarks/gpu_judgement.sh text_attack=paper Every run's report.json (and each half's summary) is packed
# into $OUT/reports.tgz every 15 s, so what finished comes back even when the loan's limit cuts the
# rest short.
set -uo pipefail
out=${OUT:-/tmp/gpu-judgement}
mkdir -p "$out"
sweep=/tmp/judgement
config=${CONFIG:-text}
experiment=validity_$config
[ "$config" = tabular ] && experiment=validity
pack() { (cd "$sweep" 2>/dev/null && find . -name report.json -o -name 'summary.*' -o -name validity.json \
  | tar czf "$out/reports.tgz.part" -T - && mv "$out/reports.tgz.part" "$out/reports.tgz") 2>/dev/null; }
half() {  # name, target, extra settings
  local name=$1 target=$2
  shift 2
  mkdir -p "/tmp/stores/$name"
  PANORAMIA_HOME="/tmp/stores/$name" timeout "${LIMIT:-470}" python3 -m panoramia.pipeline.app \
    --config-name "$config" "+experiment=$experiment" "target=$target" "generation_seed=${GEN:?}" \
    "seed=${SEEDS:?}" "hydra.sweep.dir=$sweep/$name${TAG:+-$TAG}" ${THREADS:+"threads=$THREADS"} \
    "$@" >> "$out/$name.log" 2>&1
  echo "$name: exit $?, $SECONDS s" | tee -a "$out/halves.log"
}
started=$SECONDS
pids=()
if [ -n "${TARGETS:-}" ]; then
  for target in $TARGETS; do half "$target" "$target" "$@" & pids+=($!); done
else
  half leaking "${LEAKING:-gpt2_many_epochs}" "$@" & pids+=($!)
  half control "${CONTROL:-gpt2_disjoint}" "$@" & pids+=($!)
fi
running() { for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done; return 1; }
while running; do pack; sleep 15; done
pack
echo "all: $((SECONDS - started)) s" | tee -a "$out/halves.log"
