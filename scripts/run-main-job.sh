#!/usr/bin/env bash
# saker's main job. Serving arrives with the server milestone and real small models with the one after it;
# until then this runs what the build can do today and says so plainly: generate text on the CPU with a
# tiny random-weight Qwen3 (written by `saker synth`, so its text is noise), and inspect and tokenize with it.
# `make run MODEL=path` runs a model of yours instead (a .gguf file or a Hugging Face folder).
set -euo pipefail
cd "$(dirname "$0")/.."
SAKER=${1:-build/bin/saker}
MODEL=${2:-}

echo "== $($SAKER --version)"
echo
if [ -z "$MODEL" ]; then
  MODEL=build/demo/tiny-q8_0.gguf
  mkdir -p build/demo
  echo "saker does not serve requests yet (next milestone) and ships no trained model yet. Demo model:"
  echo "a tiny random-weight Qwen3 written by 'saker synth' — its output is noise by construction."
  echo
  echo "== saker synth --preset tiny --type q8_0 -o $MODEL"
  $SAKER synth --preset tiny --type q8_0 -o "$MODEL" 2>/dev/null
  echo
fi

if [ -f "$MODEL" ]; then
  echo "== saker info $MODEL (first lines)"
  $SAKER info "$MODEL" | head -24 || true
  echo
fi

prompt="Write a haiku about mountains."
echo "== saker run -m $MODEL -p \"$prompt\" -n 48"
$SAKER --log-level warn run -m "$MODEL" -p "$prompt" -n 48 --seed 1
echo
echo "== printf 'Hello world, this is saker!' | saker tokenize -m $MODEL"
printf 'Hello world, this is saker!' | $SAKER tokenize -m "$MODEL" --ids || echo "(this model has no tokenizer)"
