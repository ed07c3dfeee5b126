#!/usr/bin/env bash
# A real target / draft pair on a GPU machine: Qwen2.5-Coder-1.5B-Instruct (the target) with
# Qwen2.5-Coder-0.5B-Instruct (its draft model) and a DFlash drafter trained there for the target, against
# llama.cpp's own speculative decoding with the same files, on held-out prompts, 256 tokens at temperature 0.
# Parts, each within one call of at most 600 s:
#   train   tools/train/drafter_for.py on the target (PAIR_MINUTES, default 8; PAIR_TRAIN_ARGS: more of its flags,
#           e.g. "--draft-batch 8"): writes PAIR_RUN (the drafter, the held-out code and prose prompts,
#           metrics.json with the drafter's acceptance in PyTorch). Start it detached (setsid) where other work
#           must go on meanwhile; PAIR_RUN/metrics.json appears at its end.
#   saker   saker bench --prompts on the code and the prose prompts: plain against --draft-model, the drafter's
#           chain and its tree (--draft-tree PAIR_TREE): tok/s, tokens per verify step, same tokens as plain.
#   serve   the same prompts one after another (serve_load.py --concurrency 1) against saker serve and
#           llama-server, each plain and with the draft model (llama-server: --spec-type draft-simple, drafts of
#           up to 3 (its default) and 16 tokens), saker also with the drafter's chain and tree: tok/s and drafts
#           accepted, one client for both engines.
# Run from the repository root:
#   PAIR_TARGET=1.5b.gguf PAIR_DRAFT=0.5b.gguf PAIR_RUN=DIR [LLAMA_BUILD=DIR] bench/pair_round.sh BIN_DIR OUT_DIR PART
# BIN_DIR: saker and lib/ (bench/collect_gpu_bins.sh); LLAMA_BUILD: a llama.cpp build holding bin/llama-server
# (bench/llama_cpp_suite.sh build). PAIR_DEVICE (cuda), PAIR_GEN (256), PAIR_PROMPTS (all of each set), PAIR_SETS
# ("code prose") and PAIR_REPS (2: saker bench's runs of each mode) shrink a run, e.g. to try the round on a CPU.
# PART all runs saker and serve; train runs only when named. Each part ends with its table.
source "$(dirname "$0")/round_common.sh"
TARGET=${PAIR_TARGET:?PAIR_TARGET: the target GGUF}
DRAFT=${PAIR_DRAFT:?PAIR_DRAFT: the draft model GGUF}
RUN=${PAIR_RUN:?PAIR_RUN: the drafter run folder}
DEVICE=${PAIR_DEVICE:-cuda}
GEN=${PAIR_GEN:-256}
TREE=${PAIR_TREE:-16}
REPS=${PAIR_REPS:-2}  # saker bench -r: each proposer's plain and speculative runs (5 took 70 s a mode for 32 x 256)
SETS=${PAIR_SETS:-code prose}

if [ "$PART" = train ]; then  # only when named: it takes minutes
  mkdir -p "$RUN"
  PYTHONUNBUFFERED=1 python3 tools/train/drafter_for.py --target "$TARGET" --out "$RUN" \
    --minutes "${PAIR_MINUTES:-8}" ${PAIR_TRAIN_ARGS:-} > "$OUT/train.txt" 2>&1
  echo "drafter_for: rc=$?"
  tail -n 4 "$OUT/train.txt"
fi

# The prompts of set $1 (code or prose), the first PAIR_PROMPTS of them, as a file under OUT.
prompts() {
  local src=$RUN/heldout_prompts.json
  [ "$1" = prose ] && src=$RUN/heldout_prose.json
  python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
n = int(sys.argv[3]) if sys.argv[3] else len(p)
json.dump(p[:n], open(sys.argv[2], "w"))
print(min(n, len(p)))' "$src" "$OUT/prompts-$1.json" "${PAIR_PROMPTS:-}" > /dev/null || return 1
  echo "$OUT/prompts-$1.json"
}

if want saker; then
  for set in $SETS; do
    P=$(prompts "$set") || { echo "no $set prompts under $RUN"; continue; }
    for proposer in draft-model chain tree; do
      case $proposer in
        draft-model) args=(--draft-model "$DRAFT") ;;
        chain) args=(--drafter "$RUN/drafter") ;;
        tree) args=(--drafter "$RUN/drafter" --draft-tree "$TREE") ;;
      esac
      name=bench-$set-$proposer
      timeout 400 "$BIN/saker" bench -m "$TARGET" --device "$DEVICE" --prompts "$P" --gen-tokens "$GEN" -r "$REPS" \
        "${args[@]}" --json "$OUT/$name.json" > "$OUT/$name.txt" 2> "$OUT/$name.log"
      echo "saker bench $set $proposer: rc=$?"
    done
  done
  echo "== saker bench -m TARGET --device $DEVICE --prompts SET.json --gen-tokens $GEN (each row: its own plain run)"
  for set in $SETS; do
    for proposer in draft-model chain tree; do
      grep -E "^\| 1 \|" "$OUT/bench-$set-$proposer.txt" 2> /dev/null | sed "s/^/| $set /"
    done
  done
fi

# serve NAME PORT COMMAND...: starts the server, drives it with each prompt set in turn, stops it.
serve() {
  local name=$1 port=$2
  shift 2
  "$@" > "$OUT/$name.server.log" 2>&1 &
  local server=$!
  for _ in $(seq 1 240); do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "http://127.0.0.1:$port/health" 2> /dev/null && break
    kill -0 "$server" 2> /dev/null || { echo "$name: server exited"; tail -n 5 "$OUT/$name.server.log"; return 1; }
    sleep 0.5
  done
  for set in $SETS; do
    P=$(prompts "$set") || continue
    n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$P")
    timeout 500 python3 bench/serve_load.py --url "http://127.0.0.1:$port" --concurrency 1 --prompts "$P" \
      --requests-per-client "$n" --gen-tokens "$GEN" --warmup 1 --json "$OUT/serve-$set-$name.json" \
      > "$OUT/serve-$set-$name.txt" 2>&1
    echo "serve $set $name: rc=$?"
  done
  kill "$server"
  wait "$server" 2> /dev/null
}

if want serve; then
  S=("$BIN/saker" serve -m "$TARGET" --device "$DEVICE" --parallel 1 --port 18130)
  serve saker-plain 18130 "${S[@]}"
  serve saker-draft-model 18130 "${S[@]}" --draft-model "$DRAFT"
  serve saker-chain 18130 "${S[@]}" --drafter "$RUN/drafter"
  serve saker-tree 18130 "${S[@]}" --drafter "$RUN/drafter" --draft-tree "$TREE"
  if [ -n "${LLAMA_BUILD:-}" ]; then
    ngl=(); [ "$DEVICE" = cuda ] && ngl=(-ngl 99 -ngld 99)
    L=("$LLAMA_BUILD/bin/llama-server" -m "$TARGET" "${ngl[@]}" -fa on -np 1 -c 4096 --port 18131)
    serve llama-plain 18131 "${L[@]}"
    serve llama-draft-model 18131 "${L[@]}" -md "$DRAFT" --spec-type draft-simple
    serve llama-draft-model-16 18131 "${L[@]}" -md "$DRAFT" --spec-type draft-simple --spec-draft-n-max 16
  fi
  echo "== serve_load.py --concurrency 1 --prompts SET.json --gen-tokens $GEN, one request at a time"
  echo "| set | server | tok/s | per-request tok/s p50 | drafts accepted |"
  for f in $(for set in $SETS; do for name in saker-plain saker-draft-model saker-chain saker-tree llama-plain \
    llama-draft-model llama-draft-model-16; do echo "$OUT/serve-$set-$name.json"; done; done); do
    [ -s "$f" ] || continue
    python3 -c 'import json, os, sys
j = json.load(open(sys.argv[1]))
lv = j["levels"][0]
set_, name = os.path.basename(sys.argv[1])[len("serve-"):-len(".json")].split("-", 1)
acc = "%s of %s" % (lv["accepted_tokens"], lv["drafted_tokens"]) if lv.get("drafted_tokens") is not None else "-"
print("| %s | %s | %.1f | %.1f | %s |" % (set_, name, lv["tokens_per_s"],
                                        lv["decode_tokens_per_s_per_request_p50"], acc))' "$f"
  done
fi
