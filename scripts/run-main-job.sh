#!/usr/bin/env bash
# saker's main job. Model execution (and so serving) does not exist yet: until it lands this shows what the
# build can do today — read a model file, tokenize text with its tokenizer — and says so plainly.
set -euo pipefail
cd "$(dirname "$0")/.."
SAKER=${1:-build/bin/saker}
MODEL=${2:-}

echo "== $($SAKER --version)"
echo
echo "saker cannot run a model yet: the forward pass and the server arrive with the next milestones"
echo "(Qwen3 on the CPU, then the server). What this build does today:"
echo

sample=$MODEL
if [ -z "$sample" ] && [ -f ../shared/data/quant/tiny-Q4_K_M.gguf ]; then sample=../shared/data/quant/tiny-Q4_K_M.gguf; fi
if [ -z "$sample" ]; then
  echo "No model file given: run 'make run MODEL=path/to/model.gguf' to inspect one of yours."
  $SAKER --help
  exit 0
fi
echo "== saker info $sample"
$SAKER info "$sample" | head -60 || true
echo
vocab=""
if [ -n "$MODEL" ]; then vocab=$MODEL; elif [ -f ../shared/data/vocab/ggml-vocab-gpt-2.gguf ]; then vocab=../shared/data/vocab/ggml-vocab-gpt-2.gguf; fi
if [ -n "$vocab" ]; then
  echo "== echo 'Hello world, this is saker!' | saker tokenize -m $vocab"
  printf 'Hello world, this is saker!' | $SAKER tokenize -m "$vocab"
  printf 'Hello world, this is saker!' | $SAKER tokenize -m "$vocab" --ids
fi
