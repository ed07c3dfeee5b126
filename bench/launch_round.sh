#!/usr/bin/env bash
# GPU checks of chained kernel launches (ops/cuda/chained_launch.cuh) and of the speculation cost policy, in
# parts that each fit one call of the GPU machine (at most 600 s):
#   tests    the chained-launch tests (chains of in-place adds, eager and replayed from a graph; also with
#            SAKER_CUDA_PDL=0), every GPU model test, the CUDA matmul tests;
#   launch   8B Q4_K_M (made with saker synth if missing): pp512, tg64 at 0 and 4096, verify 1 / 16 / 64 rows,
#            SAKER_CUDA_PDL=0 against the default, two runs each way, alternating;
#   f16      the same on 8B F16 (the FMA / cuBLAS matmuls);
#   policy   8B Q4_K_M engine at 1 / 4 / 16 streams, plain against --spec replay:2,6 with the random drafter
#            (the cost policy's bound: no level more than 5% below plain decoding).
# Run from the repository root on the GPU machine:
#   bench/launch_round.sh BIN_DIR OUT_DIR [tests|launch|f16|policy|all]   (default all: may pass 600 s)
# BIN_DIR: saker, saker_ops_cuda_tests, saker_gpu_model_tests and lib/ (bench/collect_gpu_bins.sh). Each part
# ends with its table; everything else is under OUT_DIR.
source "$(dirname "$0")/round_common.sh"
ab() {  # file tag: SAKER_CUDA_PDL=0 against the default, two runs each way
  for i in 1 2; do
    for p in 0 1; do
      SAKER_CUDA_PDL=$p timeout 120 "$BIN/saker" bench -m "$1" --device cuda -p 512 --decode-ctx 0,4096 -n 64 \
        --rows 1,16,64 -r 2 --json "$OUT/$2-pdl$p-$i.json" > "$OUT/$2-pdl$p-$i.txt" 2>&1
      echo "bench $2 SAKER_CUDA_PDL=$p run $i: rc=$?"
    done
  done
  echo "== $2: saker bench -p 512 --decode-ctx 0,4096 -n 64 --rows 1,16,64 -r 2 (test | ms | tok/s)"
  for i in 1 2; do
    for p in 0 1; do
      echo "-- SAKER_CUDA_PDL=$p run $i"
      grep -E "^\| *(pp|tg|verify)" "$OUT/$2-pdl$p-$i.txt" | cut -d'|' -f2,4,6
    done
  done
}

if want tests; then
  gtests "chained-launch tests" tests-chained.txt 60 saker_ops_cuda_tests --gtest_filter='ChainedLaunches.*'
  SAKER_CUDA_PDL=0 gtests "chained-launch tests, SAKER_CUDA_PDL=0" tests-chained-off.txt 60 saker_ops_cuda_tests \
    --gtest_filter='ChainedLaunches.*'
  gtests "GPU model tests" tests-model.txt 240 saker_gpu_model_tests
  gtests "CUDA matmul tests" tests-matmul.txt 200 saker_ops_cuda_tests --gtest_filter='CudaMatmul*'
fi

if want launch; then ab "$(model 8b q4_k_m)" 8b-q4_k_m; fi
if want f16; then ab "$(model 8b f16)" 8b-f16; fi

if want policy; then
  Q4=$(model 8b q4_k_m)
  timeout 400 "$BIN/saker" bench -m "$Q4" --device cuda --concurrency 1,4,16 --spec replay:2,6 --prompt-tokens 512 \
    --gen-tokens 128 -r 1 --json "$OUT/policy.json" > "$OUT/policy.txt" 2> "$OUT/policy.log"
  echo "policy bench: rc=$?"
  echo "== saker bench --concurrency 1,4,16 --spec replay:2,6 --prompt-tokens 512 --gen-tokens 128 -r 1"
  grep -E "^\|" "$OUT/policy.txt" | cut -d'|' -f2-
fi
