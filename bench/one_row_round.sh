#!/usr/bin/env bash
# GPU round for the one-row K-quant matmul (ops/cuda/matmul_kq_lane.cu, against its four-warp three-stage
# variant, SAKER_CUDA_MATMUL=kqlane3, and the dp4a kernel, kqdp4a), in parts that each fit one call of the GPU
# machine (at most 600 s):
#   tests    the K-quant matmul tests (every element against the host recomputation, one row among them, and
#            every width against the 64-row call), every GPU model test;
#   kernel   matmul_cuda_bench --quick q4_K and q6_K each way (one row: % of 4.28 TB/s), and Nsight Compute on
#            one lane launch of each format (bench/kernel_profile.sh: figures, stall reasons, the SASS lines that
#            wait most);
#   steps    8B Q4_K_M (made with saker synth if missing): one-row decode at 0 / 4,096 / 32,768 keys and the
#            16-row verify, both ways, two runs each, alternating.
# Run from the repository root on the GPU machine (the tests read models/ and tests/data there, or where
# SAKER_TEST_SOURCE_DIR points: bench/collect_test_data.sh packs them):
#   bench/one_row_round.sh BIN_DIR OUT_DIR [tests|kernel|steps|all]
# BIN_DIR: saker, saker_ops_cuda_tests, saker_gpu_model_tests, matmul_cuda_bench and lib/
# (bench/collect_gpu_bins.sh). Each part ends with its table; everything else is under OUT_DIR.
source "$(dirname "$0")/round_common.sh"
# The SAKER_CUDA_MATMUL of each way: lane (the default), lane3 (four warps a block, three stages), dp4a.
way() { case $1 in lane) echo "" ;; lane3) echo kqlane3 ;; *) echo kqdp4a ;; esac; }

if want tests; then
  gtests "K-quant matmul tests" tests-kq.txt 200 saker_ops_cuda_tests --gtest_filter='CudaMatmulKq.*'
  gtests "GPU model tests" tests-model.txt 240 saker_gpu_model_tests
fi

if want kernel; then
  for t in q4_K q6_K; do
    for w in lane lane3 dp4a; do
      SAKER_CUDA_MATMUL=$(way $w) timeout 60 "$BIN/matmul_cuda_bench" --quick $t > "$OUT/mm-$t-$w.txt" 2>&1
    done
  done
  echo "== matmul_cuda_bench --quick TYPE, one row, % of 4.28 TB/s (lane | lane3 | dp4a; Q6_K has no lane3)"
  for t in q4_K q6_K; do
    paste -d'|' <(tail -3 "$OUT/mm-$t-lane.txt" | awk '{print $1, $2, $3}') <(tail -3 "$OUT/mm-$t-lane3.txt" | awk '{print $3}') \
      <(tail -3 "$OUT/mm-$t-dp4a.txt" | awk '{print $3}')
  done
  TOP=16 bash "$(dirname "$0")/kernel_profile.sh" "$BIN" "$OUT/profile" \
    'q4k1:kq_lane:matmul_cuda_bench --one q4_K 12288 4096 1' \
    'q6k1:kq_lane:matmul_cuda_bench --one q6_K 4096 12288 1'
fi

if want steps; then
  Q4=$(model 8b q4_k_m)
  for i in 1 2; do
    for w in lane dp4a; do
      SAKER_CUDA_MATMUL=$(way $w) timeout 120 "$BIN/saker" bench -m "$Q4" --device cuda -p 512 \
        --decode-ctx 0,4096,32768 -n 32 --rows 1,16 -r 2 --json "$OUT/steps-$w-$i.json" > "$OUT/steps-$w-$i.txt" 2>&1
      echo "steps $w run $i: rc=$?"
    done
  done
  echo "== 8B Q4_K_M: saker bench -p 512 --decode-ctx 0,4096,32768 -n 32 --rows 1,16 -r 2 (test | ms | tok/s)"
  for i in 1 2; do
    for w in lane dp4a; do
      echo "-- $w run $i"
      grep -E "^\| *(pp|tg|verify)" "$OUT/steps-$w-$i.txt" | cut -d'|' -f2,4,6
    done
  done
fi
