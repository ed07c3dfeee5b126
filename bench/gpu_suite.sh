#!/usr/bin/env bash
# The CUDA backend's checks and benchmarks in one go, for a GPU machine that runs binaries built elsewhere:
#   bench/gpu_suite.sh BIN_DIR OUT_DIR [tests|bench|all|realmodels] [quick]
# realmodels: the pulled SmolLM2 and Gemma 3 files (in $SAKER_CACHE_DIR/models) against llama.cpp's reference
# data on the GPU backend.
# BIN_DIR holds saker, the test and playground binaries, and lib/ with the shared libraries they need.
# Tests print a summary; the benches write JSON and text under OUT_DIR; the last lines are a short table.
set -u
BIN=$(cd "$1" && pwd); OUT=$2; WHAT=${3:-all}; QUICK=${4:-}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
export SAKER_TEST_SOURCE_DIR=${SAKER_TEST_SOURCE_DIR:-$PWD}  # bench/collect_test_data.sh: elsewhere
MODELS=${SAKER_BENCH_MODELS:-/tmp/saker-bench-models}
mkdir -p "$MODELS"
summary=()

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

run_tests() {  # name binary
  local name=$1 bin=$2
  [ -x "$BIN/$bin" ] || { summary+=("$name: missing"); return; }
  timeout 300 "$BIN/$bin" --gtest_brief=1 > "$OUT/$name.txt" 2>&1
  local rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|tests? ran|cuda:|vs cpu" "$OUT/$name.txt" | tail -40
  summary+=("$name: rc=$rc $(grep -E '^\[  PASSED  \]' "$OUT/$name.txt" | head -1) $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/$name.txt") failed")
}

synth() {  # preset type -> path
  local p="$MODELS/$1-$2.gguf"
  [ -s "$p" ] || "$BIN/saker" synth --preset "$1" --type "$2" -o "$p" > "$OUT/synth-$1-$2.txt" 2>&1
  echo "$p"
}

bench_model() {  # preset type extra-args...
  local preset=$1 type=$2; shift 2
  local m; m=$(synth "$preset" "$type")
  timeout 400 "$BIN/saker" bench -m "$m" --device cuda --json "$OUT/bench-$preset-$type.json" "$@" \
    > "$OUT/bench-$preset-$type.txt" 2> "$OUT/bench-$preset-$type.log"
  local rc=$?
  echo "== $preset $type (rc=$rc)"; cat "$OUT/bench-$preset-$type.txt"; tail -3 "$OUT/bench-$preset-$type.log"
  rm -f "$m"  # the disk holds one large model at a time
}

if [ "$WHAT" = tests ] || [ "$WHAT" = all ]; then
  run_tests ops_tests saker_ops_cuda_tests
  run_tests model_tests saker_gpu_model_tests
fi
# saker run through the CLI: greedy ids on the GPU equal the CPU's on the golden models.
cli_greedy() {
  local m=$1 ids="1 2 3 4 5 6 7 8"
  local c g
  c=$("$BIN/saker" run -m "$m" --prompt-ids "$ids" -n 32 --temp 0 --ignore-eos --print-ids --device cpu 2>/dev/null | grep '^ids:')
  g=$("$BIN/saker" run -m "$m" --prompt-ids "$ids" -n 32 --temp 0 --ignore-eos --print-ids --device cuda 2>"$OUT/run-cuda.log" | grep '^ids:')
  if [ -n "$c" ] && [ "$c" = "$g" ]; then summary+=("saker run greedy cpu==cuda on $(basename "$m"): yes"); return; fi
  # Where they part: the CPU's logit gap between the two picks (a gap far below the backends' numeric
  # difference is a near-tie, which either backend may break either way; it is reported as such, not as equal).
  local -a cv gv
  read -ra cv <<< "${c#ids: }"; read -ra gv <<< "${g#ids: }"
  local i=0
  while [ $i -lt ${#cv[@]} ] && [ $i -lt ${#gv[@]} ] && [ "${cv[$i]}" = "${gv[$i]}" ]; do i=$((i + 1)); done
  local gap=""
  if [ -n "$c" ] && [ -n "$g" ] && [ $i -lt ${#cv[@]} ] && [ $i -lt ${#gv[@]} ]; then
    "$BIN/saker" run -m "$m" --prompt-ids "$ids ${cv[*]:0:$i}" --device cpu --logits-out "$OUT/tie.f32" > /dev/null 2>&1 &&
      gap=$(python3 bench/greedy_tie.py "$OUT/tie.f32" $((8 + i)) "${cv[$i]}" "${gv[$i]}" 2>/dev/null)
  fi
  if [ -n "$gap" ] && awk -v g="${gap%% *}" 'BEGIN { exit !(g < 0.02) }'; then
    summary+=("saker run greedy cpu==cuda on $(basename "$m"): equal for $i tokens, then a near-tie (CPU logits ${cv[$i]} vs ${gv[$i]}: gap ${gap%% *}, top ${gap##* })")
  else
    summary+=("saker run greedy cpu==cuda on $(basename "$m"): NO from token $i (cpu '$c' cuda '$g'; CPU gap '${gap}')")
  fi
}
if [ "$WHAT" = tests ] || [ "$WHAT" = all ]; then
  for m in tests/data/golden/qwen3-tied tests/data/golden/qwen3-untied tests/data/golden/qwen2-tied; do cli_greedy "$m"; done
fi

if [ "$WHAT" = bench ] || [ "$WHAT" = all ]; then
  if [ -n "$QUICK" ]; then
    [ -x "$BIN/matmul_cuda_bench" ] && timeout 120 "$BIN/matmul_cuda_bench" --quick > "$OUT/matmul_bench.txt" 2>&1
    [ -x "$BIN/attention_cuda_bench" ] && timeout 120 "$BIN/attention_cuda_bench" --quick > "$OUT/attention_bench.txt" 2>&1
    bench_model 8b q4_k_m -p 512,2048 --decode-ctx 0 -r 3
  else
    [ -x "$BIN/matmul_cuda_bench" ] && timeout 200 "$BIN/matmul_cuda_bench" > "$OUT/matmul_bench.txt" 2>&1
    [ -x "$BIN/attention_cuda_bench" ] && timeout 100 "$BIN/attention_cuda_bench" > "$OUT/attention_bench.txt" 2>&1
    # SAKER_BENCH_SET="8b:f16 8b:q4_k_m" picks the models (default: the issue's table plus 32B Q4_K_M).
    for spec in ${SAKER_BENCH_SET:-8b:f16 8b:q4_k_m 32b:q4_k_m}; do
      if [ "${spec%%:*}" = 32b ]; then bench_model 32b "${spec#*:}" -p 512,2048 --decode-ctx 0,4096 -r 5
      else bench_model "${spec%%:*}" "${spec#*:}"; fi
    done
  fi
  tail -25 "$OUT/matmul_bench.txt" 2>/dev/null
  tail -15 "$OUT/attention_bench.txt" 2>/dev/null
fi
if [ "$WHAT" = realmodels ]; then
  sha256sum "${SAKER_CACHE_DIR:?}"/models/*.gguf
  SAKER_TEST_DEVICE=cuda timeout 300 "$BIN/saker_golden_tests" --gtest_filter='*LlamaCppRealModel*' > "$OUT/realmodels_cuda.txt" 2>&1
  rc=$?
  grep -E "OK \]|FAILED|PASSED|differ|KL|near" "$OUT/realmodels_cuda.txt" | tail -20
  summary+=("llama.cpp comparison on cuda: rc=$rc")
  for m in "$SAKER_CACHE_DIR"/models/*.gguf; do
    for d in cpu cuda; do
      "$BIN/saker" run -m "$m" -p "Write a haiku about the sea." -n 48 --temp 0 --device $d > "$OUT/run-$d-$(basename "$m").txt" 2> "$OUT/run-$d-$(basename "$m").log"
    done
    if cmp -s "$OUT/run-cpu-$(basename "$m").txt" "$OUT/run-cuda-$(basename "$m").txt"; then
      summary+=("greedy text cpu==cuda on $(basename "$m"): yes"); else summary+=("greedy text cpu==cuda on $(basename "$m"): differs"); fi
    tail -4 "$OUT/run-cuda-$(basename "$m").txt"
  done
fi
printf '%s\n' "${summary[@]}"
