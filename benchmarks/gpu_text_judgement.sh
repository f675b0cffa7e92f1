#!/usr/bin/env bash
# A text validity judgement on one lent GPU (docs/SPEC.md §3.1), within a short loan: the leaking
# target's runs and its control's run as two multiruns side by side, each with its own stage store
# (no stage is shared between them, so neither waits on nor races the other; the seed-independent
# stages are built twice, which the GPU's idle half absorbs). From the project root, after
#   source .whl/setup.sh
#   GEN=301 SEEDS=0,1,2 bash benchmarks/gpu_text_judgement.sh
# Every run's report.json (and each half's summary) is packed into $OUT/reports.tgz every 15 s, so
# what finished comes back even when the loan's limit cuts the rest short.
set -uo pipefail
out=${OUT:-/tmp/gpu-judgement}
mkdir -p "$out"
sweep=/tmp/judgement
pack() { (cd "$sweep" 2>/dev/null && find . -name report.json -o -name 'summary.*' -o -name validity.json \
  | tar czf "$out/reports.tgz.part" -T - && mv "$out/reports.tgz.part" "$out/reports.tgz") 2>/dev/null; }
half() {  # name, target
  PANORAMIA_HOME=$(mktemp -d) timeout "${LIMIT:-470}" python3 -m panoramia.pipeline.app --config-name text \
    +experiment=validity_text "target=$2" "generation_seed=${GEN:?}" "seed=${SEEDS:?}" \
    "hydra.sweep.dir=$sweep/$1" > "$out/$1.log" 2>&1
  echo "$1: exit $?, $SECONDS s" | tee -a "$out/halves.log"
}
started=$SECONDS
half leaking gpt2_many_epochs & a=$!
half control gpt2_disjoint & b=$!
while kill -0 $a 2>/dev/null || kill -0 $b 2>/dev/null; do pack; sleep 15; done
pack
echo "all: $((SECONDS - started)) s" | tee -a "$out/halves.log"
