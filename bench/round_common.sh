# What the GPU-round scripts (bench/*_round.sh) share; sourced, not run. Sets BIN (absolute), OUT and PART from
# the script's arguments (BIN_DIR OUT_DIR [PART]), the library path for BIN/lib, the tests' source folder (the
# current one unless SAKER_TEST_SOURCE_DIR names another: bench/collect_test_data.sh), MODELS (synthesized
# files, kept between parts of one session), and the helpers below.
set -u
BIN=$(cd "$1" && pwd); OUT=$2; PART=${3:-all}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}" SAKER_TEST_SOURCE_DIR=${SAKER_TEST_SOURCE_DIR:-$PWD}
MODELS=${SAKER_BENCH_MODELS:-/tmp/saker-bench-models}
mkdir -p "$MODELS"
# Whether the part asked for includes $1.
want() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
# A gtest log's summary line(s), its first failed tests, and how many failed.
summary() { grep -hE '^\[  PASSED|^\[  FAILED  \] [0-9]' "$1" | tr '\n' ' '; }
failures() { grep -hE '^\[  FAILED  \] [A-Za-z]' "$1" | head -5; }
failed() { grep -cE '^\[  FAILED  \] [A-Za-z]' "$1"; }
# gtests LABEL FILE SECONDS BINARY [ARGS...]: BIN/BINARY --gtest_brief=1 ARGS into OUT/FILE within SECONDS, then
# LABEL with its exit status and summary, and its first failed tests.
gtests() {
  local label=$1 file=$2 seconds=$3 binary=$4
  shift 4
  timeout "$seconds" "$BIN/$binary" --gtest_brief=1 "$@" > "$OUT/$file" 2>&1
  echo "$label: rc=$? $(summary "$OUT/$file")"
  failures "$OUT/$file"
}
# model PRESET TYPE -> the path of a synthesized file (made once).
model() {
  local f=$MODELS/$1-$2.gguf
  [ -s "$f" ] || timeout 400 "$BIN/saker" synth --preset "$1" --type "$2" -o "$f" > "$OUT/synth-$1-$2.txt" 2>&1
  echo "$f"
}
