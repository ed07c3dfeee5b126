#!/usr/bin/env bash
# A candidate build against a base build on one GPU machine, in parts that each fit one call (at most 600 s):
#   tests   the candidate's CUDA op tests (FILTER, a gtest filter: default every test) and every GPU model test,
#           then those of each EXTRA build whose folder has them (each with its switches);
#   steps   8B Q4_K_M (made with saker synth if missing): `saker bench -p 512 --decode-ctx CTX -n 32 --rows ROWS
#           -r 2`, base and candidate (and EXTRA's builds) in turn, RUNS times (default 2), then one table: each
#           test's median ms over the runs for each build, and each against the base.
# Run from the repository root on the GPU machine (the tests read models/ and tests/data there, or where
# SAKER_TEST_SOURCE_DIR points: bench/collect_test_data.sh packs them):
#   BASE=BASE_BIN_DIR bench/ab_round.sh CANDIDATE_BIN_DIR OUT_DIR [tests|steps|all]
# Each BIN_DIR holds saker (the candidate's also saker_ops_cuda_tests and saker_gpu_model_tests), and
# CANDIDATE_BIN_DIR/lib the shared libraries (bench/collect_gpu_bins.sh; both builds of one tree link the same
# ones). Environment: CTX (default 0,4096,32768), ROWS (default 1,16,64), RUNS, FILTER; CAND_ENV / BASE_ENV
# (e.g. SAKER_CUDA_MATMUL=kq2t) compare one binary with two switches; EXTRA="NAME=DIR[=VAR=VALUE] ..." more
# builds (or switches of one) for the steps, so that several branches share one call.
source "$(dirname "$0")/round_common.sh"
[ -n "${BASE:-}" ] && [ -x "$BASE/saker" ] || { echo "ab_round: BASE=DIR, the base build's folder with its saker"; exit 1; }
BASE=$(cd "$BASE" && pwd)

# name=dir[=VAR=VALUE] of every build, base first.
builds=("base=$BASE${BASE_ENV:+=$BASE_ENV}" "cand=$BIN${CAND_ENV:+=$CAND_ENV}")
read -r -a extra <<< "${EXTRA:-}"
builds+=("${extra[@]}")

if want tests; then
  for b in "${builds[@]:1}"; do
    IFS== read -r side dir vars <<< "$b"
    [ -x "$dir/saker_ops_cuda_tests" ] || continue
    (
      BIN=$(cd "$dir" && pwd)
      [ -z "$vars" ] || export "${vars?}"
      gtests "$side: CUDA op tests" "tests-ops-$side.txt" 300 saker_ops_cuda_tests --gtest_filter="${FILTER:-*}"
      gtests "$side: GPU model tests" "tests-model-$side.txt" 240 saker_gpu_model_tests
    )
  done
fi

if want steps; then
  Q4=$(model 8b q4_k_m)
  for i in $(seq 1 "${RUNS:-2}"); do
    for b in "${builds[@]}"; do
      IFS== read -r side dir vars <<< "$b"
      env $vars timeout 200 "$dir/saker" bench -m "$Q4" --device cuda -p 512 --decode-ctx "${CTX:-0,4096,32768}" \
        -n 32 --rows "${ROWS:-1,16,64}" -r 2 --json "$OUT/steps-$side-$i.json" > "$OUT/steps-$side-$i.txt" 2>&1
      echo "steps $side run $i: rc=$?"
    done
  done
  echo "== 8B Q4_K_M: saker bench -p 512 --decode-ctx ${CTX:-0,4096,32768} -n 32 --rows ${ROWS:-1,16,64} -r 2, median ms of the runs"
  python3 - "$OUT" "${builds[@]%%=*}" << 'PY'
import glob, json, statistics, sys
out, sides = sys.argv[1], sys.argv[2:]
ms = {}
for side in sides:
    for path in sorted(glob.glob("%s/steps-%s-[0-9]*.json" % (out, side))):
        for r in json.load(open(path)).get("results", []):
            ms.setdefault(r["test"], {}).setdefault(side, []).append(r["ms_median"])
print("| test | " + " | ".join("%s ms" % s for s in sides) + " | " + " | ".join("%s / base" % s for s in sides[1:]) + " |")
print("|---" * (2 * len(sides)) + "|")
for test, by in ms.items():
    med = [statistics.median(by[s]) if s in by else float("nan") for s in sides]
    ratios = [m / med[0] if med[0] else float("nan") for m in med[1:]]
    print("| %s | %s | %s |" % (test, " | ".join("%.3f" % m for m in med), " | ".join("%.3f" % r for r in ratios)))
PY
fi
