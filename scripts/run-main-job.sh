#!/usr/bin/env bash
# saker's main job: serve a model over the OpenAI / Anthropic APIs and answer a chat request.
# saker ships no trained model yet (the real small models arrive with the next milestone), so by default this
# serves a tiny random-weight Qwen3 written by `saker synth` and says so plainly: its answer is noise by
# construction. `make run MODEL=path` serves a model of yours (a .gguf file or a Hugging Face folder).
set -euo pipefail
cd "$(dirname "$0")/.."
SAKER=${1:-build/bin/saker}
MODEL=${2:-}
PORT=${SAKER_RUN_PORT:-18080}

echo "== $($SAKER --version)"
if [ -z "$MODEL" ]; then
  MODEL=build/demo/tiny-q8_0.gguf
  mkdir -p build/demo
  echo
  echo "No model given and none bundled yet: serving a tiny random-weight Qwen3 written by 'saker synth'."
  echo "Its answer below is noise by construction; run 'make run MODEL=your-model.gguf' for a real one."
  $SAKER synth --preset tiny --type q8_0 -o "$MODEL" 2>/dev/null
fi

echo
echo "== saker serve -m $MODEL --port $PORT"
$SAKER --log-level warn serve -m "$MODEL" --port "$PORT" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 $server 2>/dev/null || { echo "saker serve exited"; exit 1; }
  sleep 0.2
done

request='{"messages": [{"role": "user", "content": "Write a haiku about mountains."}], "max_tokens": 48, "seed": 1}'
echo "== POST /v1/chat/completions $request"
curl -sS "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$request" |
  python3 -c 'import json, sys
r = json.load(sys.stdin)
print("answer:", r["choices"][0]["message"]["content"])
print("usage: ", r["usage"])'
