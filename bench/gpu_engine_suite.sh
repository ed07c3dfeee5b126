#!/usr/bin/env bash
# The batched engine on a GPU machine, from prebuilt binaries (bench/collect_gpu_bins.sh), in one go:
#   bench/gpu_engine_suite.sh BIN_DIR OUT_DIR [PARTS]   PARTS: any of tests,f16,q4,prefix,serve,spec (default
#                                                       all but spec; prefix, serve and spec need q4);
#                                                       SAKER_BENCH_REPS: -r (3)
# 1. CUDA op and model tests (the engine's CUDA test among them: batched greedy == alone or a near-tie)
# 2. single-stream `saker bench` (tg128, pp2048) on the 8B-geometry F16 and Q4_K_M files, for bench/baselines
# 3. engine throughput at 1/4/16/64 streams and the prefix cache's warm/cold time to first token (Q4_K_M)
# 4. `saker serve --parallel 64` under 1/4/16/64 HTTP clients (bench/serve_load.py)
# 5. spec: the speculation tests on the GPU (the DFlash drafter against the CPU backend, in the engine, sampled
#    speculation by chi-square), then `--spec replay:2,4,6,8` at 1/4/16 streams with a random DFlash drafter of
#    the target's shape (the drafter's cost included) and without one (drafts free)
# The last lines are a short table. SAKER_BENCH_KEEP=1 keeps the synthesized Q4_K_M file in $SAKER_BENCH_MODELS
# (for bench/llama_cpp_suite.sh on the same file).
set -u
BIN=$(cd "$1" && pwd); OUT=$2; PARTS=${3:-tests,f16,q4,prefix,serve}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
export SAKER_TEST_SOURCE_DIR=${SAKER_TEST_SOURCE_DIR:-$PWD}  # bench/collect_test_data.sh: elsewhere
MODELS=${SAKER_BENCH_MODELS:-/tmp/saker-bench-models}
mkdir -p "$MODELS"
summary=()
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

if has tests; then
  for t in saker_ops_cuda_tests saker_gpu_model_tests; do
    timeout 300 "$BIN/$t" --gtest_brief=1 > "$OUT/$t.txt" 2>&1
    summary+=("$t: rc=$? $(grep -E '^\[  PASSED  \]' "$OUT/$t.txt" | head -1) $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/$t.txt") failed")
    grep -E "FAILED|CUDA engine|parts at token" "$OUT/$t.txt" | head -20
  done
fi

synth() {  # type -> path
  local p="$MODELS/8b-$1.gguf"
  [ -s "$p" ] || "$BIN/saker" synth --preset 8b --type "$1" -o "$p" > "$OUT/synth-$1.txt" 2>&1
  echo "$p"
}

if has f16; then
  f16=$(synth f16)
  timeout 200 "$BIN/saker" bench -m "$f16" --device cuda -p 2048 --decode-ctx 0 -n 128 --rows 1 -r 3 \
    --json "$OUT/single-f16.json" > "$OUT/single-f16.txt" 2> "$OUT/single-f16.log"
  cat "$OUT/single-f16.txt"
  rm -f "$f16"
fi
if ! has q4; then printf '%s\n' "${summary[@]}"; exit 0; fi

q4=$(synth q4_k_m)
timeout 200 "$BIN/saker" bench -m "$q4" --device cuda -p 2048 --decode-ctx 0 -n 128 --rows 1 -r "${SAKER_BENCH_REPS:-3}" \
  --json "$OUT/single-q4.json" > "$OUT/single-q4.txt" 2> "$OUT/single-q4.log"
cat "$OUT/single-q4.txt"
REPS=${SAKER_BENCH_REPS:-3}
timeout 300 "$BIN/saker" bench -m "$q4" --device cuda --concurrency 1,4,16,64 -r "$REPS" --warmup 1 \
  --json "$OUT/engine-q4.json" > "$OUT/engine-q4.txt" 2> "$OUT/engine-q4.log"
cat "$OUT/engine-q4.txt"; tail -3 "$OUT/engine-q4.log"
if has spec; then
  timeout 400 "$BIN/saker_gpu_model_tests" --gtest_brief=1 \
    --gtest_filter='CudaDrafter*:CudaSpecSampling*:CudaSpeculation*:CudaTaps*' > "$OUT/spec-tests.txt" 2>&1
  summary+=("speculation tests: rc=$? $(grep -E '^\[  PASSED  \]' "$OUT/spec-tests.txt" | head -1) $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/spec-tests.txt") failed")
  grep -E "FAILED|drafter on CUDA|position|seeds gave|verify steps" "$OUT/spec-tests.txt" | head -30
  for drafter in random none; do
    timeout 500 "$BIN/saker" bench -m "$q4" --device cuda --concurrency 1,4,16 --spec replay:2,4,6,8 \
      --replay-drafter "$drafter" -r "$REPS" --json "$OUT/replay-$drafter-q4.json" \
      > "$OUT/replay-$drafter-q4.txt" 2> "$OUT/replay-$drafter-q4.log"
    summary+=("replay, drafter $drafter: rc=$?")
    sed -n '/| N | spec |/,$p' "$OUT/replay-$drafter-q4.txt"; tail -2 "$OUT/replay-$drafter-q4.log"
  done
fi
if has prefix; then
  timeout 200 "$BIN/saker" bench -m "$q4" --device cuda --prefix-reuse 8192 -r "$REPS" \
    --json "$OUT/prefix-q4.json" > "$OUT/prefix-q4.txt" 2> "$OUT/prefix-q4.log"
  cat "$OUT/prefix-q4.txt"; tail -3 "$OUT/prefix-q4.log"
fi
if ! has serve; then [ "${SAKER_BENCH_KEEP:-0}" = 1 ] || rm -f "$q4"; printf '%s\n' "${summary[@]}"; exit 0; fi

# The server path: 64 sequences per step, N streaming HTTP clients, 512-token prompts, 128 tokens each.
"$BIN/saker" serve -m "$q4" --device cuda --port 18123 --parallel 64 --ctx 1024 > "$OUT/serve.log" 2>&1 &
server=$!
for i in $(seq 1 120); do
  curl -sf http://127.0.0.1:18123/health > /dev/null 2>&1 && break
  kill -0 "$server" 2> /dev/null || { echo "saker serve exited:"; tail -5 "$OUT/serve.log"; break; }
  sleep 1
done
timeout 300 python3 bench/serve_load.py --url http://127.0.0.1:18123 --concurrency 1,4,16,64 \
  --requests-per-client 2 --prompt-tokens 512 --gen-tokens 128 --warmup 2 --json "$OUT/serve-q4.json" \
  > "$OUT/serve-q4.txt" 2>&1
cat "$OUT/serve-q4.txt"
curl -s http://127.0.0.1:18123/metrics | grep -E "^saker_(engine|prefix|kv|preempt)" > "$OUT/serve-metrics.txt"
kill "$server"; wait "$server" 2>/dev/null
[ "${SAKER_BENCH_KEEP:-0}" = 1 ] || rm -f "$q4"
printf '%s\n' "${summary[@]}"
