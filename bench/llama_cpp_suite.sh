#!/usr/bin/env bash
# llama.cpp's figures for the measurements of bench/gpu_engine_suite.sh, on a GPU machine, built there from a
# llama.cpp source tree, so both engines run on the same file in the same session:
#   bench/llama_cpp_suite.sh build SRC_DIR BUILD_DIR      CUDA build (sm_90a) of llama-bench, llama-batched-bench
#                                                          and llama-server; offline (no UI assets, no curl)
#   bench/llama_cpp_suite.sh run BUILD_DIR MODEL OUT_DIR  1. llama-bench -fa 1: pp2048, tg128
#                                                          2. llama-batched-bench: 512-token prompts, 128 tokens
#                                                             each, 1/4/16/64 sequences (decode tok/s = S_TG)
#                                                          3. llama-server -np 64 (1,024 tokens a slot) under
#                                                             bench/serve_load.py at 1/4/16/64 clients
# The last lines are a short table.
set -u
mode=$1

if [ "$mode" = source ]; then
  OUT=$(realpath -m "$2"); VERSION=${3:-0.3.36}
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download -q --no-deps --no-binary=:all: -d "$tmp" "llama-cpp-python==$VERSION" || exit 1
  tar xzf "$tmp"/llama_cpp_python-*.tar.gz -C "$tmp" || exit 1
  # Left out: docs, models, tests and examples (not built), the web UI's sources (LLAMA_BUILD_UI=OFF) and the
  # other GPU backends.
  excludes=(docs models media tests benches gguf-py examples tools/ui/src tools/ui/tests tools/ui/package-lock.json)
  for b in sycl vulkan opencl hexagon metal et; do excludes+=("ggml/src/ggml-$b"); done
  args=(); for e in "${excludes[@]}"; do args+=(--exclude="llama.cpp/$e"); done
  tar cf - -C "$tmp"/llama_cpp_python-*/vendor "${args[@]}" llama.cpp | xz -9 -T0 > "$OUT" || exit 1
  echo "llama.cpp source: $OUT ($(du -h "$OUT" | cut -f1))"
  exit 0
fi

if [ "$mode" = build ]; then
  SRC=$2; BUILD=$3
  jobs=$(nproc)
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGGML_NATIVE=OFF -DGGML_CUDA_NCCL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_APP=OFF \
    > "$BUILD.configure.log" 2>&1 || { tail -20 "$BUILD.configure.log"; exit 1; }
  start=$(date +%s)
  cmake --build "$BUILD" -j "$jobs" --target llama-bench llama-batched-bench llama-server > "$BUILD.build.log" 2>&1
  rc=$?
  echo "llama.cpp build: rc=$rc in $(( $(date +%s) - start )) s"
  [ $rc -eq 0 ] || tail -30 "$BUILD.build.log"
  exit $rc
fi

[ "$mode" = run ] || { echo "usage: $0 source OUT.tar.xz [VERSION] | build SRC BUILD | run BUILD MODEL OUT" >&2; exit 2; }
BUILD=$2; MODEL=$3; OUT=$4
BIN=$BUILD/bin
[ -x "$BIN/llama-batched-bench" ] && [ -s "$MODEL" ] || { echo "missing $BIN/llama-batched-bench or $MODEL" >&2; exit 1; }
mkdir -p "$OUT"
summary=()

timeout 300 "$BIN/llama-bench" -m "$MODEL" -ngl 99 -fa 1 -p 2048 -n 128 -r 2 -o json \
  > "$OUT/llama-bench.json" 2> "$OUT/llama-bench.log"
summary+=("llama-bench: $(python3 -c '
import json, sys
for r in json.load(open(sys.argv[1])):
    kind = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
    print("%s %.1f" % (kind, r["avg_ts"]), end="  ")' "$OUT/llama-bench.json" 2>&1)")

# Room for 64 sequences of 512 + 128 tokens, prompts not shared.
timeout 400 "$BIN/llama-batched-bench" -m "$MODEL" -ngl 99 -fa on -c 41984 -b 2048 -ub 512 \
  -npp 512 -ntg 128 -npl 1,4,16,64 > "$OUT/llama-batched-bench.txt" 2> "$OUT/llama-batched-bench.log"
grep -E '^\|' "$OUT/llama-batched-bench.txt"
# Columns: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
summary+=("llama-batched-bench decode tok/s (B: S_TG): $(awk -F'|' '$4 ~ /[0-9]/ {gsub(/ /, "", $4); gsub(/ /, "", $9); printf "%s: %s  ", $4, $9}' "$OUT/llama-batched-bench.txt")")

"$BIN/llama-server" -m "$MODEL" -ngl 99 -fa on -np 64 -c 65536 --port 18124 > "$OUT/llama-server.log" 2>&1 &
server=$!
for i in $(seq 1 180); do
  curl -sf http://127.0.0.1:18124/health > /dev/null 2>&1 && break
  kill -0 "$server" 2> /dev/null || { echo "llama-server exited:"; tail -5 "$OUT/llama-server.log"; break; }
  sleep 1
done
timeout 300 python3 bench/serve_load.py --url http://127.0.0.1:18124 --concurrency 1,4,16,64 \
  --requests-per-client 2 --prompt-tokens 512 --gen-tokens 128 --warmup 2 --json "$OUT/llama-server-load.json" \
  > "$OUT/llama-server-load.txt" 2>&1
cat "$OUT/llama-server-load.txt"
kill "$server"; wait "$server" 2>/dev/null
summary+=("llama-server load: $(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
for lv in j.get("levels", []):
    print("%s clients %.1f tok/s (%s errors)" % (lv.get("concurrency"), lv.get("tokens_per_s", 0), lv.get("errors")), end="; ")' "$OUT/llama-server-load.json" 2>&1)")
printf '%s\n' "${summary[@]}"
