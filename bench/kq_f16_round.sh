#!/usr/bin/env bash
# The GPU checks of the kernels written without a GPU, in parts that each fit one call of the GPU machine:
#   tests    the int8 width-invariant kernel (K-quants, and Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / IQ4_XS in
#            invariant contexts), speculation on synthesized files of every type with --batch-invariant, and
#            the f16 tensor-core K-quant kernel (ops/cuda/matmul_kq_f16.cu) at each K-stream count;
#   kernels  per-kernel timings of Q4_K and Q6_K for the int8 kernels and the three f16 variants;
#   models   8B Q4_K_M decode and verify steps for each of them, and 0.6B Q8_0 with and without --batch-invariant
#            (what width invariance costs the 32-element formats).
# Run from the repository root on the GPU machine:
#   bench/kq_f16_round.sh BIN_DIR OUT_DIR [tests|kernels|models|all]   (default all: may pass 600 s)
# BIN_DIR: saker, saker_ops_cuda_tests, matmul_cuda_bench, saker_gpu_model_tests and lib/
# (bench/collect_gpu_bins.sh). Each part ends with its table; everything else is under OUT_DIR.
source "$(dirname "$0")/round_common.sh"
modes=(int8 kqf16 kqf16k2 kqf16k1)
env_of() { [ "$1" = int8 ] && echo "" || echo "$1"; }

if want tests; then
  timeout 200 "$BIN/saker_ops_cuda_tests" --gtest_brief=1 --gtest_filter='CudaMatmulKq.*:CudaMatmulQ32*' \
    > "$OUT/tests-int8.txt" 2>&1
  echo "tests int8 (K-quant, 32-element formats): rc=$? $(failed "$OUT/tests-int8.txt") failed"
  grep -E "Failure|differ|got" "$OUT/tests-int8.txt" | head -6
  timeout 240 "$BIN/saker_gpu_model_tests" --gtest_brief=1 --gtest_filter='Types/CudaSpeculation.*' \
    > "$OUT/tests-spec.txt" 2>&1
  echo "tests speculation (every file type): rc=$? $(failed "$OUT/tests-spec.txt") failed"
  grep -E "Failure|differ|FAILED" "$OUT/tests-spec.txt" | head -8
  for m in kqf16 kqf16k2 kqf16k1; do
    SAKER_CUDA_MATMUL=$m timeout 150 "$BIN/saker_ops_cuda_tests" --gtest_brief=1 --gtest_filter='CudaMatmulKqF16*' \
      > "$OUT/tests-$m.txt" 2>&1
    echo "tests $m: rc=$? $(failed "$OUT/tests-$m.txt") failed"
    grep -E "Failure|read back|differ|got" "$OUT/tests-$m.txt" | head -4
  done
fi

if want kernels; then
  for m in "${modes[@]}"; do
    for t in q4_K q6_K; do
      SAKER_CUDA_MATMUL=$(env_of $m) timeout 60 "$BIN/matmul_cuda_bench" --quick $t > "$OUT/mb-$m-$t.txt" 2>&1
    done
  done
  echo "== per kernel (matmul_cuda_bench --quick TYPE: % of 4.28 TB/s per shape and row count)"
  for m in "${modes[@]}"; do
    for t in q4_K q6_K; do
      echo "-- $m $t"
      grep -iE "^\| *$t|^$t" "$OUT/mb-$m-$t.txt" | cut -c1-150 | head -8
    done
  done
fi

if want models; then
  Q4=$(model 8b q4_k_m) Q8=$(model 0.6b q8_0)
  for m in "${modes[@]}"; do
    SAKER_CUDA_MATMUL=$(env_of $m) timeout 120 "$BIN/saker" bench -m "$Q4" --device cuda -p 512 --decode-ctx 0 \
      -n 64 --rows 1,4,16,64 -r 2 --json "$OUT/bench-$m.json" > "$OUT/bench-$m.txt" 2> "$OUT/bench-$m.log"
    echo "bench $m: rc=$?"
  done
  for inv in plain invariant; do
    flag=$([ $inv = invariant ] && echo --batch-invariant || echo "")
    timeout 120 "$BIN/saker" bench -m "$Q8" --device cuda -p 512 --decode-ctx 0 -n 64 --rows 1,4,16,64 -r 2 $flag \
      --json "$OUT/bench-q8-$inv.json" > "$OUT/bench-q8-$inv.txt" 2> "$OUT/bench-q8-$inv.log"
    echo "bench 0.6B Q8_0 $inv: rc=$?"
  done
  echo "== 8B Q4_K_M steps (saker bench -p 512 -n 64 --rows 1,4,16,64 -r 2)"
  for m in "${modes[@]}"; do
    echo "-- $m"
    grep -E "^\| (tg|verify)" "$OUT/bench-$m.txt"
  done
  echo "== 0.6B Q8_0 steps, default kernels and --batch-invariant (same command)"
  for inv in plain invariant; do
    echo "-- $inv"
    grep -E "^\| (tg|verify)" "$OUT/bench-q8-$inv.txt"
  done
fi
