#!/usr/bin/env bash
# One GPU call that decides the f16 tensor-core K-quant kernel (ops/cuda/matmul_kq_f16.cu) against the int8
# kernels: its tests at each K-stream count, per-kernel timings of Q4_K and Q6_K, and 8B Q4_K_M decode and
# verify steps, each configuration in the same run. Run from the repository root on the GPU machine:
#   bench/kq_f16_round.sh BIN_DIR OUT_DIR
# BIN_DIR: saker, saker_ops_cuda_tests, matmul_cuda_bench, saker_gpu_model_tests (optional) and lib/
# (bench/collect_gpu_bins.sh). The last lines
# are the table to read; everything else is under OUT_DIR.
set -u
BIN=$(cd "$1" && pwd); OUT=$2
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}" SAKER_TEST_SOURCE_DIR=$PWD
MODEL=${SAKER_BENCH_MODELS:-/tmp/saker-bench-models}/8b-q4_k_m.gguf
mkdir -p "$(dirname "$MODEL")"
modes=(int8 kqf16 kqf16k2 kqf16k1)
env_of() { [ "$1" = int8 ] && echo "" || echo "$1"; }

# The model is synthesized while the tests and the kernel timings run.
if [ ! -s "$MODEL" ]; then
  ( timeout 300 "$BIN/saker" synth --preset 8b --type q4_k_m -o "$MODEL" > "$OUT/synth.txt" 2>&1 ) &
fi
# The int8 kernel (K-quants, and the 32-element formats and IQ4_XS in invariant contexts), then speculation on
# synthesized files of those formats with --batch-invariant.
timeout 200 "$BIN/saker_ops_cuda_tests" --gtest_brief=1 --gtest_filter='CudaMatmulKq.*:CudaMatmulQ32*' \
  > "$OUT/tests-int8.txt" 2>&1
echo "tests int8 (K-quant, 32-element formats): rc=$? $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/tests-int8.txt") failed"
grep -E "Failure|differ|got" "$OUT/tests-int8.txt" | head -6
if [ -x "$BIN/saker_gpu_model_tests" ]; then
  timeout 200 "$BIN/saker_gpu_model_tests" --gtest_brief=1 --gtest_filter='Types/CudaSpeculation.*' > "$OUT/tests-spec.txt" 2>&1
  echo "tests speculation (every file type): rc=$? $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/tests-spec.txt") failed"
  grep -E "Failure|differ" "$OUT/tests-spec.txt" | head -6
fi
for m in kqf16 kqf16k2 kqf16k1; do
  SAKER_CUDA_MATMUL=$m timeout 150 "$BIN/saker_ops_cuda_tests" --gtest_brief=1 --gtest_filter='CudaMatmulKqF16*' \
    > "$OUT/tests-$m.txt" 2>&1
  echo "tests $m: rc=$? $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/tests-$m.txt") failed"
  grep -E "Failure|read back|differ|got" "$OUT/tests-$m.txt" | head -4
done
for m in "${modes[@]}"; do
  for t in q4_K q6_K; do
    SAKER_CUDA_MATMUL=$(env_of $m) timeout 60 "$BIN/matmul_cuda_bench" --quick $t > "$OUT/mb-$m-$t.txt" 2>&1
  done
done
wait
for m in "${modes[@]}"; do
  SAKER_CUDA_MATMUL=$(env_of $m) timeout 120 "$BIN/saker" bench -m "$MODEL" --device cuda -p 512 --decode-ctx 0 \
    -n 64 --rows 1,4,16,64 -r 2 --json "$OUT/bench-$m.json" > "$OUT/bench-$m.txt" 2> "$OUT/bench-$m.log"
  echo "bench $m: rc=$?"
done

echo "== per kernel (matmul_cuda_bench --quick TYPE: % of 4.28 TB/s per shape and row count)"
for m in "${modes[@]}"; do
  for t in q4_K q6_K; do
    echo "-- $m $t"
    grep -iE "^\| *$t|^$t" "$OUT/mb-$m-$t.txt" | cut -c1-150 | head -8
  done
done
echo "== 8B Q4_K_M steps (saker bench -p 512 -n 64 --rows 1,4,16,64 -r 2)"
for m in "${modes[@]}"; do
  echo "-- $m"
  grep -E "^\| (tg|verify)" "$OUT/bench-$m.txt"
done
