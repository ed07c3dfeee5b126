#!/usr/bin/env bash
# GPU checks and figures of speculation in the engine (taps kept on the GPU, the cost policy), in parts that each
# fit one call of the GPU machine (at most 600 s):
#   tests    the GPU tests of taps (host and device, chunked, replayed), the CUDA drafter (device taps against
#            host taps, bit for bit), speculation and sampled speculation on every file type, and the engine;
#   policy   8B Q4_K_M at 1 / 4 / 16 streams, plain against --spec replay:2,6 with a random drafter of z-lab's
#            Qwen3-8B DFlash shape beside it, median of three timed runs (issue bound: no level more than 5%
#            below plain decoding; the tokens must equal plain decoding's);
#   sweep    one stream, replay:2,4,6,8 over 256 tokens: what speculation brings at each acceptance.
# Run from the repository root on the GPU machine:
#   bench/spec_round.sh BIN_DIR OUT_DIR [tests|policy|sweep|all]   (default all: about 300 s)
# BIN_DIR: saker, saker_gpu_model_tests and lib/ (bench/collect_gpu_bins.sh). Each part ends with its table;
# everything else (logs, bench JSON) is under OUT_DIR.
source "$(dirname "$0")/round_common.sh"

if want tests; then
  gtests "GPU speculation tests" tests.txt 240 saker_gpu_model_tests \
    --gtest_filter='CudaTaps*:CudaDrafter*:*CudaSpeculation*:CudaSpecSampling*:CudaEngine*'
fi

bench() {  # name, then saker bench arguments after the model
  local name=$1
  shift
  timeout 280 "$BIN/saker" bench -m "$(model 8b q4_k_m)" --device cuda --prompt-tokens 512 "$@" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2> "$OUT/$name.log"
  echo "bench $name: rc=$?"
  echo "== saker bench -m 8b-q4_k_m.gguf --device cuda --prompt-tokens 512 $*"
  grep -E "^\|" "$OUT/$name.txt" | cut -d'|' -f2-
}
if want policy; then bench policy --concurrency 1,4,16 --spec replay:2,6 --gen-tokens 128 -r 3; fi
if want sweep; then bench sweep --concurrency 1 --spec replay:2,4,6,8 --gen-tokens 256 -r 2; fi
