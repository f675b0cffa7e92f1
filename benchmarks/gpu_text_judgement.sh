#!/usr/bin/env bash
# The text judgement of docs/RESULTS.md §19 (generation seed 301): benchmarks/gpu_judgement.sh with
# the text audit's targets. From the project root, after `source .whl/setup.sh`:
#   GEN=301 SEEDS=0,1,2 bash benchmarks/gpu_text_judgement.sh
CONFIG=text LEAKING=gpt2_many_epochs CONTROL=gpt2_disjoint exec bash "$(dirname "$0")/gpu_judgement.sh" "$@"
