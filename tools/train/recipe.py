#!/usr/bin/env python3
"""saker-mini: a small Qwen3 code model and its DFlash drafter, trained end to end in one command.

  python3 tools/train/recipe.py --out OUTDIR --seed 1

Stages (each timed; the whole run is held to --minutes-total of wall clock):
  1. corpus: .py files of this interpreter's stdlib and site/dist-packages, deduplicated, split by file
  2. tokenizer: byte-level BPE (HF tokenizers), --vocab tokens, <|endoftext|> = 0, <|mask|> = 1
  3. target: Qwen3ForCausalLM trained on packed --ctx windows for --minutes-target; held-out loss/perplexity
  4. drafter: the target's continuations of training-split prompts; DFlash drafter trained on them for the
     rest of --minutes-drafter; mean accepted length per verify step (temperature 0) on held-out prompts
  5. outputs under OUTDIR: hf/ (target), drafter/, metrics.json, reference.json, heldout_prompts.json,
     README.md (model card), log.txt; with saker built, also the Q8_0 GGUF (see package.py)

--smoke runs every stage at toy sizes on the CPU in a few minutes (a pipeline check, not a model).
"""
import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import time

T_START = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))


class Logger:
    def __init__(self):
        self.lines = []
        self.file = None

    def open(self, path):
        self.file = open(path, "w")
        for line in self.lines:
            self.file.write(line + "\n")

    def __call__(self, msg):
        line = f"[{time.time() - T_START:6.1f}s] {msg}"
        print(line, flush=True)
        self.lines.append(line)
        if self.file:
            self.file.write(line + "\n")
            self.file.flush()


log = Logger()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="toy sizes on the CPU: checks the pipeline end to end")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--minutes-total", type=float, default=9.5,
                    help="wall-clock cap for the whole run; the training budgets shrink to respect it")
    ap.add_argument("--minutes-target", type=float, default=2.5, help="target training budget")
    ap.add_argument("--minutes-drafter", type=float, default=4.75,
                    help="drafter budget: generating its data plus training it")
    # corpus and tokenizer
    ap.add_argument("--corpus-mb", type=float, default=128, help="cap on training-split source text (MB)")
    ap.add_argument("--heldout-mb", type=float, default=4, help="cap on held-out source text (MB)")
    ap.add_argument("--heldout-permille", type=int, default=20, help="share of files held out, per mille")
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--tok-sample-mb", type=float, default=32, help="training text the tokenizer learns from")
    # target
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--batch", type=int, default=64, help="sequences of --ctx tokens per step")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100, help="warm-up steps")
    ap.add_argument("--target-steps", type=int, default=None,
                    help="fixed step count instead of the wall-clock budget (reproducible schedules)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the target for training")
    ap.add_argument("--eval-tokens", type=int, default=2_000_000, help="held-out tokens scored")
    # drafter
    ap.add_argument("--draft-layers", type=int, default=2)
    ap.add_argument("--draft-taps", type=int, default=3, help="number of tapped target layers")
    ap.add_argument("--draft-tap-ids", default=None, help="tapped target layers, e.g. 1,4,6 (default: spread "
                                                          "from layer 1 to layer N-2)")
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--gen-prompt", type=int, default=64, help="prompt tokens of each drafter-data sequence")
    ap.add_argument("--gen-new", type=int, default=448, help="generated tokens of each drafter-data sequence")
    ap.add_argument("--gen-batch", type=int, default=2048)
    ap.add_argument("--gen-temps", default="0,0,0,0.8",
                    help="sampling temperatures, taken in turn batch by batch (mostly greedy: the drafter is "
                         "judged on greedy continuations, whose later tokens only greedy data labels exactly)")
    ap.add_argument("--gen-share", type=float, default=0.25, help="share of the drafter budget spent generating")
    ap.add_argument("--draft-data", default=None, metavar="FILE",
                    help="keep the generated drafter data in FILE (torch.save) and reuse it when FILE exists, so "
                         "a second drafter run on the same target spends its whole budget training")
    ap.add_argument("--draft-batch", type=int, default=32, help="sequences per drafter step")
    ap.add_argument("--draft-anchors", type=int, default=128, help="anchor blocks per sequence")
    ap.add_argument("--draft-lr", type=float, default=2e-3)
    ap.add_argument("--draft-gamma", type=float, default=7.0, help="loss weight decay over block offsets")
    ap.add_argument("--draft-steps", type=int, default=None, help="fixed drafter step count")
    ap.add_argument("--accept-prompts", type=int, default=32, help="held-out prompts for the acceptance measure")
    ap.add_argument("--accept-new", type=int, default=128, help="tokens generated per acceptance prompt")
    ap.add_argument("--ref-prompts", type=int, default=16, help="held-out prompts with reference greedy tokens")
    ap.add_argument("--ref-new", type=int, default=64)
    ap.add_argument("--reuse-target", default=None, metavar="RUN",
                    help="take tokenizer and target from an earlier run's output folder (same --seed and corpus "
                         "options) and redo only the evaluation and the drafter, e.g. with a larger "
                         "--minutes-drafter")
    ap.add_argument("--bundle", default=None,
                    help="also write the outputs as OUT-name.tar.NN parts of at most 15 MiB (plus metrics.json, "
                         "README.md, log.txt) into this folder, for transfers that cap the size of a file")
    ap.add_argument("--saker", default=None, help="saker binary for the GGUF (default: build/bin/saker if present)")
    a = ap.parse_args(argv)
    if a.smoke:
        small = dict(corpus_mb=1.5, heldout_mb=0.3, heldout_permille=100, vocab=1024, tok_sample_mb=1.0,
                     hidden=64, layers=4, heads=2, kv_heads=1, head_dim=32, ffn=128, ctx=128, batch=8, lr=3e-3,
                     warmup=5, eval_tokens=8192, draft_layers=1, draft_taps=2, gen_prompt=32, gen_new=64,
                     gen_batch=32, draft_batch=4, draft_anchors=16, accept_prompts=3, accept_new=40, ref_prompts=3,
                     ref_new=24, minutes_total=5.0, minutes_target=0.5, minutes_drafter=0.75)
        for k, v in small.items():
            if getattr(a, k) == ap.get_default(k):
                setattr(a, k, v)
    return a


def flatten(docs):
    import itertools
    import numpy as np
    import torch
    n = sum(len(d) for d in docs)
    return torch.from_numpy(np.fromiter(itertools.chain.from_iterable(docs), dtype=np.int32, count=n))


def pick_prompts(texts, tok, n, rng, min_tokens, max_tokens):
    """Prompts from held-out files: from a random 'def'/'class' line, whole lines until at least min_tokens
    tokens; files without such lines, or whose prompt would exceed max_tokens, are skipped."""
    out = []
    for t in texts:
        if len(out) >= n:
            break
        lines = t.splitlines(keepends=True)
        starts = [i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "class ", "async def "))]
        if not starts:
            continue
        i = rng.choice(starts)
        text = ""
        for line in lines[i:]:
            text += line
            if len(tok.encode(text, add_special_tokens=False).ids) >= min_tokens:
                break
        ids = tok.encode(text, add_special_tokens=False).ids
        if min_tokens <= len(ids) <= max_tokens:
            out.append(dict(text=text, ids=ids))
    return out


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    log.open(os.path.join(a.out, "log.txt"))
    if a.smoke:  # be a modest neighbour on small machines
        os.environ.setdefault("RAYON_NUM_THREADS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, HERE)
    import torch
    import transformers
    import tokenizers
    import bpe
    import corpus
    import dflash
    import lm
    import card

    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() and not a.smoke else "cpu"))
    torch.set_num_threads(1 if a.smoke else min(16, os.cpu_count() or 1))
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    amp = torch.bfloat16 if device.type == "cuda" else torch.float32
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    deadline = T_START + a.minutes_total * 60
    command = "python3 tools/train/recipe.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:]))
    env = dict(python=sys.version.split()[0], torch=torch.__version__, transformers=transformers.__version__,
               tokenizers=tokenizers.__version__, device=str(device),
               device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu")
    log(f"saker-mini recipe: {command}")
    log(f"environment: {env}")
    times = {}
    metrics = dict(command=command, seed=a.seed, smoke=a.smoke, environment=env, args=vars(a), times=times)

    # 1. corpus
    t = time.time()
    data = corpus.gather(a.seed, int(a.corpus_mb * 1e6), int(a.heldout_mb * 1e6), a.heldout_permille, log=log)
    times["corpus_s"] = round(time.time() - t, 1)
    if len(data["heldout"]) < 4 or len(data["train"]) < 10:
        raise SystemExit("corpus too small: found too few Python files")

    # 2. tokenizer
    t = time.time()
    hf_dir = os.path.join(a.out, "hf")
    prev = None
    if a.reuse_target:
        import shutil
        from tokenizers import Tokenizer
        with open(os.path.join(a.reuse_target, "metrics.json")) as f:
            prev = json.load(f)
        for k in ("seed", "corpus_mb", "heldout_mb", "heldout_permille", "vocab", "ctx"):
            if prev["args"][k] != getattr(a, k):
                raise SystemExit(f"--reuse-target: {k} was {prev['args'][k]} in that run, {getattr(a, k)} now")
        src = os.path.join(a.reuse_target, "hf")
        if os.path.realpath(src) != os.path.realpath(hf_dir):
            shutil.copytree(src, hf_dir, dirs_exist_ok=True)
        tok = Tokenizer.from_file(os.path.join(hf_dir, "tokenizer.json"))
        metrics["target_command"] = prev["command"]
        log(f"reusing tokenizer and target of {a.reuse_target} ({prev['command']})")
    else:
        tok = bpe.train_tokenizer(data["train"], a.vocab, int(a.tok_sample_mb * 1e6), log=log)
        bpe.save_tokenizer(tok, hf_dir, a.ctx)
    times["tokenizer_train_s"] = round(time.time() - t, 1) if not prev else prev["times"]["tokenizer_train_s"]
    t = time.time()
    train_docs = bpe.encode_documents(tok, data["train"])
    held_docs = bpe.encode_documents(tok, data["heldout"])
    train_stream = flatten(train_docs)
    held_stream = flatten(held_docs)
    times["tokenize_s"] = round(time.time() - t, 1)
    st = data["stats"]
    st.update(train_tokens=train_stream.numel(), heldout_tokens=held_stream.numel(),
              bytes_per_token=round(st["train_bytes"] / max(1, train_stream.numel()), 3),
              vocab_size=tok.get_vocab_size())
    metrics["corpus"] = st
    log(f"tokens: train {train_stream.numel() / 1e6:.2f}M, held-out {held_stream.numel() / 1e6:.3f}M, "
        f"{st['bytes_per_token']} bytes/token ({times['tokenize_s']}s)")
    # the AutoTokenizer round trip must give the same ids as the trained tokenizer
    from transformers import AutoTokenizer
    hf_tok = AutoTokenizer.from_pretrained(hf_dir)
    probe = data["heldout"][0][:2000]
    st_same = hf_tok(probe, add_special_tokens=False)["input_ids"] == tok.encode(probe, add_special_tokens=False).ids
    if not st_same:
        log("WARNING: AutoTokenizer on the saved folder encodes differently from the trained tokenizer")
    st["autotokenizer_round_trip_ok"] = st_same
    rng = random.Random(a.seed)
    ref_prompts = pick_prompts(data["heldout"], tok, a.ref_prompts + a.accept_prompts, rng, 32,
                               min(128, a.ctx // 2))
    if len(ref_prompts) < 2:
        raise SystemExit("too few held-out prompts")
    accept_prompts = ref_prompts[: a.accept_prompts]
    with open(os.path.join(a.out, "heldout_prompts.json"), "w") as f:
        json.dump(accept_prompts, f)
    train_stream = train_stream.to(device)
    held_stream = held_stream.to(device)
    del data["train"], train_docs, held_docs

    # 3. target
    vocab = tok.get_vocab_size()
    bpe_eos = tok.token_to_id(bpe.EOS)
    if prev:
        from transformers import Qwen3ForCausalLM
        model = Qwen3ForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).to(device)
        model.config._attn_implementation = "sdpa"
        cfg = model.config
        a.rope_theta = prev["target_config"]["rope_theta"]
        a.layers = cfg.num_hidden_layers
    else:
        cfg = lm.make_config(vocab, a.hidden, a.layers, a.heads, a.kv_heads, a.head_dim, a.ffn, a.ctx,
                             a.rope_theta, bpe_eos)
        model = lm.build_model(cfg, device)
    n_params = lm.count_params(model)
    metrics["target_config"] = {k: getattr(cfg, k) for k in (
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings")}
    metrics["target_config"]["rope_theta"] = a.rope_theta
    metrics["target_params"] = n_params
    log(f"target: Qwen3ForCausalLM {n_params / 1e6:.2f}M parameters (tied embeddings {vocab}x{a.hidden} = "
        f"{vocab * a.hidden / 1e6:.2f}M)")
    if prev:
        tstats = prev["target_train"]
        times["target_train_s"] = prev["times"]["target_train_s"]
    else:
        reserve_after = a.minutes_drafter * 60 + (60 if not a.smoke else 30)
        budget = min(a.minutes_target * 60, deadline - time.time() - reserve_after)
        if budget < a.minutes_target * 60:
            log(f"target: budget cut to {budget:.0f}s to keep the whole run within {a.minutes_total} min")
        budget = max(budget, 10.0)
        train_model = torch.compile(model) if a.compile else model
        t = time.time()
        tstats = lm.train(train_model, train_stream, batch=a.batch, ctx=a.ctx, budget_s=budget, peak_lr=a.lr,
                          weight_decay=a.weight_decay, warmup_steps=a.warmup, seed=a.seed, device=device,
                          amp_dtype=amp, max_steps=a.target_steps, log_every=10 if a.smoke else 100, log=log)
        times["target_train_s"] = round(time.time() - t, 1)
        tstats["epochs"] = round(tstats["tokens"] / train_stream.numel(), 2)
    metrics["target_train"] = tstats
    model.eval()
    # The shipped weights are bf16 (the run's outputs must travel in small files): round now, so that every
    # number below (evaluation, references, the drafter's data and its measurement) is of the shipped model.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    if device.type == "cuda":  # full fp32 from here on: the numbers saker will be compared with
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    t = time.time()
    ev = lm.evaluate(model, held_stream, a.ctx, 16, a.eval_tokens, device, amp, n_bytes=st["heldout_bytes"])
    ev_fp32 = lm.evaluate(model, held_stream, a.ctx, 16, min(a.eval_tokens, 262144), device, torch.float32)
    ev["heldout_loss_fp32_subset"] = ev_fp32["heldout_loss"]
    ev["heldout_ppl_fp32_subset"] = ev_fp32["heldout_ppl"]
    ev["fp32_subset_tokens"] = ev_fp32["heldout_tokens"]
    metrics["target_eval"] = ev
    log(f"target: held-out loss {ev['heldout_loss']} perplexity {ev['heldout_ppl']} "
        f"({ev['heldout_tokens']} tokens; fp32 on {ev_fp32['heldout_tokens']}: {ev_fp32['heldout_loss']})")
    if not prev:
        model.to(torch.bfloat16).save_pretrained(hf_dir, safe_serialization=True)  # lossless: bf16 values already
        model.float()
    gen_cfg = {"bos_token_id": bpe_eos, "eos_token_id": bpe_eos, "pad_token_id": bpe_eos, "do_sample": False,
               "max_new_tokens": 256}
    with open(os.path.join(hf_dir, "generation_config.json"), "w") as f:
        json.dump(gen_cfg, f, indent=2)
        f.write("\n")

    # greedy references (fp32 weights and the Q8_0 weights saker loads) and sample completions
    refs = []
    q8 = lm.q8_0_model(model).to(device)
    for p in ref_prompts[: a.ref_prompts]:
        ids = torch.tensor([p["ids"]], device=device)
        g32, m32 = lm.generate(model, ids, a.ref_new, want_margins=True)
        gq8, mq8 = lm.generate(q8, ids, a.ref_new, want_margins=True)
        refs.append(dict(prompt=p["text"], prompt_ids=p["ids"], greedy=g32[0].tolist(),
                         greedy_min_margin=round(float(m32.min()), 4), greedy_q8_0=gq8[0].tolist(),
                         greedy_q8_0_min_margin=round(float(mq8.min()), 4),
                         q8_0_first_divergence=next((i for i, (x, y) in enumerate(zip(g32[0].tolist(),
                                                    gq8[0].tolist())) if x != y), None),
                         completion=tok.decode(g32[0].tolist(), skip_special_tokens=False),
                         completion_q8_0=tok.decode(gq8[0].tolist(), skip_special_tokens=False)))
    del q8
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(dict(description="held-out prompts; greedy = transformers' greedy tokens (no EOS stop) of the "
                                   "saved bf16 weights, computed in float32; greedy_q8_0 = the same with every "
                                   "matrix passed through Q8_0 as `saker convert --type q8_0` stores it",
                       new_tokens=a.ref_new, dtype="float32", prompts=refs), f, indent=1)
    times["target_eval_s"] = round(time.time() - t, 1)
    metrics["reference"] = dict(prompts=len(refs), q8_0_identical_to_unquantized=sum(
        r["q8_0_first_divergence"] is None for r in refs))

    # 4. drafter
    dbudget = min(a.minutes_drafter * 60, deadline - time.time() - (45 if not a.smoke else 20))
    dbudget = max(dbudget, 10.0)
    temps = [float(x) for x in a.gen_temps.split(",")]
    t = time.time()
    if a.draft_data and os.path.exists(a.draft_data):
        saved = torch.load(a.draft_data, map_location=device)
        if saved["gen"] != [a.gen_prompt, a.gen_new, temps, a.seed] or saved["target_sha256"] != target_digest(hf_dir):
            raise SystemExit(f"--draft-data {a.draft_data}: made for another target or generation setting")
        ddata = saved["tokens"]
        metrics["drafter_data_reused"] = dict(path=a.draft_data, seconds=saved["seconds"])
        log(f"drafter data: {ddata.shape[0]} sequences x {ddata.shape[1]} tokens from {a.draft_data} "
            f"(generated in {saved['seconds']}s)")
    else:
        ddata = dflash.generate_data(model, train_stream, prompt_len=a.gen_prompt, new_tokens=a.gen_new,
                                     batch=a.gen_batch, temperatures=temps, budget_s=a.gen_share * dbudget,
                                     seed=a.seed + 11, amp_dtype=amp, log=log)
        if a.draft_data:
            torch.save(dict(tokens=ddata.cpu(), gen=[a.gen_prompt, a.gen_new, temps, a.seed],
                            target_sha256=target_digest(hf_dir), seconds=round(time.time() - t, 1)), a.draft_data)
    times["drafter_data_s"] = round(time.time() - t, 1)
    taps = dflash.choose_taps(a.draft_tap_ids, a.layers, a.draft_taps)
    dcfg = dflash.make_config(cfg, a.draft_layers, a.block, tok.token_to_id(bpe.MASK), taps)
    t = time.time()
    train_budget = max(5.0, min(dbudget - times["drafter_data_s"], deadline - time.time() - 40))
    # measured below is what was saved: the bf16 weights, read back in float32
    drafter, dstats = train_drafter(a, dcfg, model, ddata, temps, amp, train_budget, log)
    times["drafter_train_s"] = round(time.time() - t, 1)
    metrics["drafter_config"] = dcfg
    metrics["drafter_train"] = dstats
    t = time.time()
    prompts = [torch.tensor(p["ids"], device=device) for p in accept_prompts]
    acc = dflash.measure_acceptance(model.float(), drafter, prompts, a.accept_new,
                                    budget_s=max(5.0, deadline - time.time() - 15), log=log)
    acc["command"] = ("python3 tools/train/dflash.py --target OUT/hf --drafter OUT/drafter "
                      f"--prompts OUT/heldout_prompts.json --new-tokens {a.accept_new}")
    times["acceptance_s"] = round(time.time() - t, 1)
    metrics["acceptance"] = acc

    # 5. outputs
    samples = [dict(prompt=r["prompt"], completion=r["completion"]) for r in refs[:6]]
    metrics["samples"] = samples
    times["total_s"] = round(time.time() - T_START, 1)
    saker = a.saker or next((p for p in ("build/bin/saker",) if os.path.exists(p)), None)
    if saker:
        gguf = os.path.join(a.out, "saker-mini-q8_0.gguf")
        r = subprocess.run([saker, "convert", hf_dir, "-o", gguf, "--type", "q8_0"], capture_output=True, text=True)
        metrics["gguf"] = dict(path=os.path.basename(gguf), ok=r.returncode == 0,
                               bytes=os.path.getsize(gguf) if r.returncode == 0 else None,
                               command=f"saker convert OUT/hf -o OUT/saker-mini-q8_0.gguf --type q8_0")
        log(f"gguf: {'written' if r.returncode == 0 else 'FAILED: ' + r.stderr.strip()[-500:]}")
    else:
        log("gguf: no saker binary found; run tools/train/package.py after building saker")
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    card.write(os.path.join(a.out, "README.md"), metrics)
    log(f"done in {time.time() - T_START:.0f}s: held-out perplexity {ev['heldout_ppl']}, "
        f"drafter mean accepted length {acc['mean_accepted_length']} (block {a.block}, temperature 0)")
    if a.bundle:
        write_bundle(a.out, a.bundle)


def train_drafter(a, dcfg, model, ddata, temps, amp_dtype, budget_s, log):
    """dflash.train_new with the flags both recipes (this one and drafter_for.py) share: --draft-batch,
    --draft-anchors, --draft-lr, --draft-gamma, --draft-steps, --gen-prompt, --gen-new, --seed and --smoke;
    the drafter is saved under OUT/drafter."""
    import dflash
    return dflash.train_new(dcfg, model, ddata, seed=a.seed, prompt_len=a.gen_prompt, new_tokens=a.gen_new,
                            temperatures=temps, batch=a.draft_batch, anchors=a.draft_anchors, budget_s=budget_s,
                            peak_lr=a.draft_lr, gamma=a.draft_gamma, amp_dtype=amp_dtype, max_steps=a.draft_steps,
                            log_every=10 if a.smoke else 100, folder=os.path.join(a.out, "drafter"), log=log)


def target_digest(hf_dir):
    import hashlib
    with open(os.path.join(hf_dir, "model.safetensors"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_bundle(out, dest, part_bytes=15 * 1024 * 1024):
    """OUT as one uncompressed tar cut into parts (`cat NAME.tar.* | tar -x` restores it), plus the files a
    reader wants first. The GGUF, if any, is left out: package.py writes it from hf/."""
    import io
    import shutil
    import tarfile
    os.makedirs(dest, exist_ok=True)
    name = os.path.basename(os.path.normpath(out))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(out, arcname=name, filter=lambda ti: None if ti.name.endswith(".gguf") else ti)
    data = buf.getvalue()
    parts = [data[i:i + part_bytes] for i in range(0, len(data), part_bytes)]
    for i, chunk in enumerate(parts):
        with open(os.path.join(dest, f"{name}.tar.{i:02d}"), "wb") as f:
            f.write(chunk)
    for f in ("metrics.json", "README.md", "log.txt"):
        shutil.copy2(os.path.join(out, f), os.path.join(dest, f))
    log(f"bundle: {len(data) / 1e6:.1f} MB in {len(parts)} parts under {dest} "
        f"(restore: cat {name}.tar.* | tar -x)")


def run(argv=None):
    a = parse_args(argv)
    try:
        main(argv)
    except BaseException:
        import traceback
        log("FAILED:\n" + traceback.format_exc())
        if a.bundle:  # what the run got to, for a transfer that returns only the bundle folder
            import shutil
            os.makedirs(a.bundle, exist_ok=True)
            if os.path.exists(os.path.join(a.out, "log.txt")):
                shutil.copy2(os.path.join(a.out, "log.txt"), os.path.join(a.bundle, "log.txt"))
        raise


if __name__ == "__main__":
    run()
