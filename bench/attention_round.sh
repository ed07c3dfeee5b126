#!/usr/bin/env bash
# GPU round for the decode attention (ops/cuda/attention_decode_mma.cu), in parts that each fit one call of the
# GPU machine (at most 600 s):
#   tests    the attention tests, the chained-launch tests, every GPU model test;
#   kernel   attention_cuda_bench --quick --match decode (L2 emptied by a read, then by a memset as before
#            2026-12-07), and Nsight Compute on one decode_mma launch at 4,096 and 32,768 keys
#            (bench/kernel_profile.sh: figures, stall reasons, the SASS lines that wait most);
#   steps    8B Q4_K_M (made with saker synth if missing): one-row decode at 0 / 4,096 / 8,192 / 32,768 keys and
#            the 16-row verify, two runs.
# Run from the repository root on the GPU machine (the tests read models/ and tests/data there, or where
# SAKER_TEST_SOURCE_DIR points: bench/collect_test_data.sh packs them):
#   bench/attention_round.sh BIN_DIR OUT_DIR [tests|kernel|steps|all]
# BIN_DIR: saker, saker_ops_cuda_tests, saker_gpu_model_tests, attention_cuda_bench and lib/
# (bench/collect_gpu_bins.sh). Each part ends with its table; everything else is under OUT_DIR.
source "$(dirname "$0")/round_common.sh"

if want tests; then
  gtests "attention + chained-launch tests" tests-attention.txt 150 saker_ops_cuda_tests \
    --gtest_filter='*Attention*:ChainedLaunches.*'
  gtests "GPU model tests" tests-model.txt 240 saker_gpu_model_tests
fi

if want kernel; then
  timeout 120 "$BIN/attention_cuda_bench" --quick --match decode > "$OUT/attn-read.txt" 2>&1
  timeout 120 "$BIN/attention_cuda_bench" --quick --match decode --memset-flush > "$OUT/attn-memset.txt" 2>&1
  echo "== attention_cuda_bench --quick --match decode: us with L2 emptied by a read | by a memset"
  paste -d'|' <(grep -E "^\| decode" "$OUT/attn-read.txt" | cut -d'|' -f2,3) \
    <(grep -E "^\| decode" "$OUT/attn-memset.txt" | cut -d'|' -f3)
  TOP=16 bash "$(dirname "$0")/kernel_profile.sh" "$BIN" "$OUT/profile" \
    'decode4k:decode_mma:attention_cuda_bench --quick --match 4096' \
    'decode32k:decode_mma:attention_cuda_bench --quick --match 32768'
fi

if want steps; then
  Q4=$(model 8b q4_k_m)
  for i in 1 2; do
    timeout 200 "$BIN/saker" bench -m "$Q4" --device cuda -p 512 --decode-ctx 0,4096,8192,32768 -n 32 --rows 1,16 -r 2 \
      --json "$OUT/steps-$i.json" > "$OUT/steps-$i.txt" 2>&1
    echo "steps run $i: rc=$?"
  done
  echo "== 8B Q4_K_M: saker bench -p 512 --decode-ctx 0,4096,8192,32768 -n 32 --rows 1,16 -r 2 (test | ms | tok/s)"
  for i in 1 2; do
    echo "-- run $i"
    grep -E "^\| *(pp|tg|verify)" "$OUT/steps-$i.txt" | cut -d'|' -f2,4,6
  done
fi
