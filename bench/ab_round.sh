#!/usr/bin/env bash
# A candidate build against a base build on one GPU machine, in parts that each fit one call (at most 600 s):
#   tests   the candidate's CUDA op tests (FILTER, a gtest filter: default every test) and every GPU model test;
#   steps   8B Q4_K_M (made with saker synth if missing): `saker bench -p 512 --decode-ctx CTX -n 32 --rows ROWS
#           -r 2`, base and candidate alternating RUNS times (default 2), then one table: each test's median ms
#           over the runs, base against candidate, and their ratio.
# Run from the repository root on the GPU machine (the tests read models/ and tests/data there, or where
# SAKER_TEST_SOURCE_DIR points: bench/collect_test_data.sh packs them):
#   BASE=BASE_BIN_DIR bench/ab_round.sh CANDIDATE_BIN_DIR OUT_DIR [tests|steps|all]
# Each BIN_DIR holds saker (the candidate's also saker_ops_cuda_tests and saker_gpu_model_tests), and
# CANDIDATE_BIN_DIR/lib the shared libraries (bench/collect_gpu_bins.sh; both builds of one tree link the same
# ones). Environment: CTX (default 0,4096,32768), ROWS (default 1,16,64), RUNS, FILTER; CAND_ENV / BASE_ENV
# (e.g. SAKER_CUDA_MATMUL=kq2t) compare one binary with two switches.
source "$(dirname "$0")/round_common.sh"
[ -n "${BASE:-}" ] && [ -x "$BASE/saker" ] || { echo "ab_round: BASE=DIR, the base build's folder with its saker"; exit 1; }
BASE=$(cd "$BASE" && pwd)

if want tests; then
  gtests "candidate's CUDA op tests" tests-ops.txt 300 saker_ops_cuda_tests --gtest_filter="${FILTER:-*}"
  gtests "candidate's GPU model tests" tests-model.txt 240 saker_gpu_model_tests
fi

if want steps; then
  Q4=$(model 8b q4_k_m)
  for i in $(seq 1 "${RUNS:-2}"); do
    for side in base cand; do
      if [ $side = base ]; then bin=$BASE/saker vars=${BASE_ENV:-}; else bin=$BIN/saker vars=${CAND_ENV:-}; fi
      env $vars timeout 200 "$bin" bench -m "$Q4" --device cuda -p 512 --decode-ctx "${CTX:-0,4096,32768}" -n 32 \
        --rows "${ROWS:-1,16,64}" -r 2 --json "$OUT/steps-$side-$i.json" > "$OUT/steps-$side-$i.txt" 2>&1
      echo "steps $side run $i: rc=$?"
    done
  done
  echo "== 8B Q4_K_M: saker bench -p 512 --decode-ctx ${CTX:-0,4096,32768} -n 32 --rows ${ROWS:-1,16,64} -r 2, median ms of the runs"
  python3 - "$OUT" << 'PY'
import glob, json, statistics, sys
ms = {}
for side in ("base", "cand"):
    for path in sorted(glob.glob("%s/steps-%s-*.json" % (sys.argv[1], side))):
        for r in json.load(open(path)).get("results", []):
            ms.setdefault(r["test"], {}).setdefault(side, []).append(r["ms_median"])
print("| test | base ms | candidate ms | candidate / base |\n|---|---|---|---|")
for test, sides in ms.items():
    b, c = (statistics.median(sides[s]) if s in sides else float("nan") for s in ("base", "cand"))
    print("| %s | %.3f | %.3f | %.3f |" % (test, b, c, c / b if b else float("nan")))
PY
fi
