#!/usr/bin/env python3
"""A DFlash drafter for a model you already have, in one command.

  python3 tools/train/drafter_for.py --target MODEL.gguf --out OUTDIR [--minutes 8] [--seed 1]

The target is read by transformers (a GGUF through the `gguf` package, any quant transformers dequantizes, or
a Hugging Face folder) and stays frozen; only the drafter trains. Stages, each timed, the whole run held to
--minutes of wall clock:
  1. corpus: .py files of this interpreter's stdlib and site/dist-packages (corpus.py), split by file; the
     training split is tokenized with the target's own tokenizer
  2. held-out prompts: code (from a def/class line of a held-out file) and prose (the opening of a held-out
     module docstring), none of them seen in training
  3. drafter data: the target's own continuations of training-split windows (mostly greedy)
  4. drafter: DFlash (dflash.py; the target's embedding and head reused), trained on that data
  5. acceptance: mean tokens committed per verify step at temperature 0 on the held-out code and prose
     prompts, speculative output checked against plain greedy
  6. outputs under OUTDIR: drafter/ (config.json + model.safetensors, what `saker run --drafter` reads),
     heldout_prompts.json (code), heldout_prose.json, metrics.json, README.md, log.txt

The mask token (the block's unknown rows) must be a token the target never sees in use: by default the first
row of the embedding past the tokenizer's vocabulary where there is one (padded vocabularies such as Qwen's),
else the highest-id special token that is not BOS, EOS, padding or part of the chat template, else (a GGUF
whose tokenizer marks no spare special token, and pads its vocabulary with tokens of its own) the highest id
that no token of the training corpus uses. --mask-token picks one by id.

Too short a --minutes is refused before the drafter data is generated, with the budget that would leave a
minute of drafter training after what the target and the corpus took to load here.

--smoke runs every stage at toy sizes on the CPU (a pipeline check, not a drafter).
"""
import argparse
import json
import math
import os
import random
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from recipe import Logger, flatten, pick_prompts, train_drafter, write_bundle  # noqa: E402

T_START = time.time()
log = Logger()
# Architectures whose embedding and head saker's drafter uses exactly as transformers does.
SUPPORTED_TARGETS = {"llama", "mistral", "qwen2", "qwen3"}


def file_name(path):
    """A path's last part ("runs/x/" -> "x"): how the card, metrics.json and log.txt name the target and the
    output folder, not where this machine keeps them (they travel with the drafter)."""
    return os.path.basename(os.path.normpath(path))


def reader_command(argv, paths):
    """The command as a reader would type it: the given paths (the target, the output folder) by file_name."""
    def shown(x):
        if x in paths:
            return file_name(x)
        flag, eq, value = x.partition("=")
        if x.startswith("--") and eq and value in paths:
            return flag + "=" + file_name(value)
        return x
    return "python3 tools/train/drafter_for.py " + " ".join(shlex.quote(shown(x)) for x in argv)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, help="the target: a .gguf file or a Hugging Face folder")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="toy sizes on the CPU: checks the pipeline end to end")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget of the whole run")
    ap.add_argument("--corpus-mb", type=float, default=48, help="cap on training-split source text (MB)")
    ap.add_argument("--heldout-mb", type=float, default=4, help="cap on held-out source text (MB)")
    ap.add_argument("--heldout-permille", type=int, default=20, help="share of files held out, per mille")
    ap.add_argument("--mask-token", type=int, default=None, help="the drafter's mask token id (see above)")
    ap.add_argument("--draft-layers", type=int, default=3)
    ap.add_argument("--draft-taps", type=int, default=5, help="number of tapped target layers")
    ap.add_argument("--draft-tap-ids", default=None, help="tapped target layers, e.g. 1,8,14 (default: spread "
                                                          "from layer 1 to N-2)")
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--gen-prompt", type=int, default=64, help="prompt tokens of each drafter-data sequence")
    ap.add_argument("--gen-new", type=int, default=448, help="generated tokens of each drafter-data sequence")
    ap.add_argument("--gen-batch", type=int, default=256)
    ap.add_argument("--gen-temps", default="0,0,0,0.8", help="sampling temperatures, taken in turn by batch")
    ap.add_argument("--gen-share", type=float, default=0.3, help="share of the drafter budget spent generating")
    ap.add_argument("--draft-batch", type=int, default=16, help="sequences per drafter step")
    ap.add_argument("--draft-anchors", type=int, default=128, help="anchor blocks per sequence")
    ap.add_argument("--draft-lr", type=float, default=1e-3)
    ap.add_argument("--draft-gamma", type=float, default=7.0, help="loss weight decay over block offsets")
    ap.add_argument("--draft-steps", type=int, default=None, help="fixed drafter step count")
    ap.add_argument("--accept-prompts", type=int, default=32, help="held-out code prompts for the acceptance")
    ap.add_argument("--prose-prompts", type=int, default=16, help="held-out prose prompts for the acceptance")
    ap.add_argument("--accept-new", type=int, default=128, help="tokens generated per acceptance prompt")
    ap.add_argument("--bundle", default=None,
                    help="also write the outputs as OUT-name.tar.NN parts of at most 15 MiB (plus metrics.json, "
                         "README.md, log.txt) into this folder, for transfers that cap the size of a file")
    a = ap.parse_args(argv)
    if a.smoke:
        small = dict(corpus_mb=0.6, heldout_mb=0.3, heldout_permille=100, draft_layers=1, draft_taps=2,
                     gen_prompt=24, gen_new=40, gen_batch=8, draft_batch=2, draft_anchors=8, accept_prompts=2,
                     prose_prompts=1, accept_new=24, minutes=4.0, block=8)
        for k, v in small.items():
            if getattr(a, k) == ap.get_default(k):
                setattr(a, k, v)
    return a


class TokenizerIds:
    """The target's HF tokenizer with the `encode(text, add_special_tokens).ids` face recipe.pick_prompts uses."""

    class _Ids:
        def __init__(self, ids):
            self.ids = ids

    def __init__(self, hf):
        self.hf = hf

    def encode(self, text, add_special_tokens=False):
        return self._Ids(self.hf(text, add_special_tokens=add_special_tokens)["input_ids"])


def load_target(path, device, dtype):
    """transformers' model and tokenizer of a GGUF file (dequantized) or a Hugging Face folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if os.path.isfile(path):
        folder, name = os.path.split(os.path.abspath(path))
        kw = dict(gguf_file=name)
        for need in ("gguf", "accelerate"):  # transformers reads GGUF files through both
            try:
                __import__(need)
            except ImportError:
                raise SystemExit(f"reading {name} needs the Python packages gguf and accelerate "
                                 f"(pip install gguf accelerate): {need} is missing")
    else:
        folder, kw = path, {}
    tok = AutoTokenizer.from_pretrained(folder, **kw)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **kw).to(device).eval()
    return model, tok


def choose_mask_token(model, tok, requested, corpus_ids=None):
    """The drafter's mask token and why it was chosen (see the module notes); corpus_ids, a LongTensor of the
    training corpus's token ids, for the last rule."""
    rows = model.get_input_embeddings().weight.shape[0]
    if requested is not None:
        if not 0 <= requested < rows:
            raise SystemExit(f"--mask-token {requested}: outside the target's {rows} embedding rows")
        return requested, "--mask-token"
    if rows > len(tok):
        return len(tok), f"the first embedding row past the tokenizer's {len(tok)} tokens"
    template = getattr(tok, "chat_template", None) or ""
    if isinstance(template, dict):
        template = " ".join(template.values())
    taken = {tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id}
    specials = sorted({i for i in tok.all_special_ids} | set(getattr(tok, "added_tokens_decoder", {}) or {}),
                      reverse=True)
    for i in specials:
        text = tok.convert_ids_to_tokens(i)
        if i in taken or not text or text in template:
            continue
        return i, f"special token {text!r}, unused by the chat template"
    if corpus_ids is not None:
        import torch
        used = torch.zeros(rows, dtype=torch.bool, device=corpus_ids.device)
        used[corpus_ids] = True
        for i in (~used).nonzero().flatten().flip(0).tolist():
            if i not in taken:
                text = tok.convert_ids_to_tokens(i) if i < len(tok) else None
                return i, f"token {text!r}, used nowhere in the {corpus_ids.numel()} training tokens"
    raise SystemExit("no unused token for the drafter's mask: pass --mask-token ID")


def pick_prose(texts, tok, n, rng, min_tokens, max_tokens):
    """Prose prompts: the opening of held-out module docstrings, cut after min_tokens tokens at a word boundary."""
    import ast
    out = []
    for t in rng.sample(texts, len(texts)):
        if len(out) >= n:
            break
        try:
            doc = ast.get_docstring(ast.parse(t))
        except (SyntaxError, ValueError, RecursionError):
            continue
        if not doc or len(doc) < 400 or sum(c.isalpha() or c.isspace() for c in doc) < 0.85 * len(doc):
            continue
        words, text = doc.split(), ""
        for w in words:
            text = (text + " " + w) if text else w
            if len(tok.encode(text).ids) >= min_tokens:
                break
        ids = tok.encode(text).ids
        if min_tokens <= len(ids) <= max_tokens:
            out.append(dict(text=text, ids=ids))
    return out


# The drafter's share of the run: generation takes --gen-share of what is left after a reserve, the acceptance
# runs keep ACCEPT_RESERVE_S, and the drafter trains on the rest.
DATA_RESERVE_S, ACCEPT_RESERVE_S, MIN_TRAIN_S = 90.0, 60.0, 60.0


def check_budget(a, remaining_s, spent_s):
    """Refuses a --minutes that leaves the drafter under MIN_TRAIN_S of training (a drafter of a few steps
    accepts next to nothing) before minutes go into generating its data, and says what would do; --smoke and a
    fixed --draft-steps are exempt."""
    if a.smoke or a.draft_steps is not None:
        return
    share = a.gen_share
    train_s = remaining_s - share * max(10.0, remaining_s - DATA_RESERVE_S) - ACCEPT_RESERVE_S
    if train_s >= MIN_TRAIN_S:
        return
    need_remaining = (MIN_TRAIN_S + ACCEPT_RESERVE_S - share * DATA_RESERVE_S) / (1 - share)
    need = math.ceil(2 * (spent_s + need_remaining) / 60) / 2  # minutes, rounded up to a half
    raise SystemExit(f"--minutes {a.minutes:g} leaves about {max(0.0, train_s):.0f} s to train the drafter after "
                     f"{spent_s:.0f} s of loading the target and the corpus here: give --minutes {need:g} or more "
                     f"(that is {MIN_TRAIN_S:.0f} s of training; a longer run trains a better drafter)")


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    log.open(os.path.join(a.out, "log.txt"))
    if a.smoke:
        os.environ.setdefault("RAYON_NUM_THREADS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    import transformers
    import corpus
    import dflash

    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() and not a.smoke else "cpu"))
    torch.set_num_threads(1 if a.smoke else min(16, os.cpu_count() or 1))
    torch.manual_seed(a.seed)
    amp = torch.bfloat16 if device.type == "cuda" else torch.float32
    deadline = T_START + a.minutes * 60
    target_name = file_name(a.target)
    command = reader_command(argv or sys.argv[1:], (a.target, a.out))
    env = dict(python=sys.version.split()[0], torch=torch.__version__, transformers=transformers.__version__,
               device=str(device), device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu")
    log(f"DFlash drafter for {target_name}: {command}")
    log(f"environment: {env}")
    times = {}
    recorded = dict(vars(a), target=target_name, out=file_name(a.out))
    metrics = dict(command=command, seed=a.seed, smoke=a.smoke, environment=env, args=recorded, times=times,
                   target_file=target_name)

    # 0. the target, frozen; float32 weights (dequantized) so the drafter learns what the file computes
    t = time.time()
    model, hf_tok = load_target(a.target, device, torch.float32)
    for p in model.parameters():
        p.requires_grad_(False)
    cfg = model.config
    # saker's drafter embeds block tokens with the target's embedding as stored and applies its head as is:
    # targets that scale embeddings or cap logits (Gemma) would train a drafter saker computes differently.
    if cfg.model_type not in SUPPORTED_TARGETS:
        raise SystemExit(f"{a.target}: a {cfg.model_type} target; drafter_for.py trains drafters for "
                         f"{', '.join(sorted(SUPPORTED_TARGETS))} targets")
    n_layers = cfg.num_hidden_layers
    if getattr(cfg, "head_dim", None) is None:
        cfg.head_dim = cfg.hidden_size // cfg.num_attention_heads
    times["target_load_s"] = round(time.time() - t, 1)
    metrics["target_config"] = {k: getattr(cfg, k, None) for k in (
        "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "rms_norm_eps", "tie_word_embeddings")}
    log(f"target: {cfg.model_type}, {n_layers} layers, hidden {cfg.hidden_size}, vocab "
        f"{model.get_input_embeddings().weight.shape[0]} ({times['target_load_s']}s)")

    # 1. corpus, in the target's tokens
    t = time.time()
    data = corpus.gather(a.seed, int(a.corpus_mb * 1e6), int(a.heldout_mb * 1e6), a.heldout_permille, log=log)
    if len(data["heldout"]) < 4 or len(data["train"]) < 10:
        raise SystemExit("corpus too small: found too few Python files")
    eos = hf_tok.eos_token_id
    # One batch call: the fast tokenizer encodes the files on every core (the same ids as one call a file;
    # 48 MB one file at a time took 38 s of a GPU machine's run).
    docs = [ids + ([eos] if eos is not None else [])
            for ids in hf_tok(data["train"], add_special_tokens=False)["input_ids"]]
    stream = flatten(docs).to(device)
    times["corpus_s"] = round(time.time() - t, 1)
    metrics["corpus"] = dict(data["stats"], train_tokens=stream.numel())
    log(f"corpus: {stream.numel() / 1e6:.2f}M training tokens ({times['corpus_s']}s)")
    mask_id, why = choose_mask_token(model, hf_tok, a.mask_token, stream)
    metrics["mask_token"] = dict(id=mask_id, why=why)
    log(f"mask token {mask_id} ({why})")

    # 2. held-out prompts
    tok = TokenizerIds(hf_tok)
    rng = random.Random(a.seed)
    code = pick_prompts(data["heldout"], tok, a.accept_prompts, rng, 32, 128)
    prose = pick_prose(data["heldout"], tok, a.prose_prompts, rng, 32, 128)
    if len(code) < 2:
        raise SystemExit("too few held-out code prompts")
    for name, prompts in (("heldout_prompts.json", code), ("heldout_prose.json", prose)):
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(prompts, f)
    log(f"held-out prompts: {len(code)} code, {len(prose)} prose")

    # 3. drafter data
    check_budget(a, deadline - time.time(), time.time() - T_START)
    budget = max(10.0, deadline - time.time() - (30 if a.smoke else DATA_RESERVE_S))
    temps = [float(x) for x in a.gen_temps.split(",")]
    t = time.time()
    ddata = dflash.generate_data(model, stream, prompt_len=a.gen_prompt, new_tokens=a.gen_new, batch=a.gen_batch,
                                 temperatures=temps, budget_s=a.gen_share * budget, seed=a.seed + 11, amp_dtype=amp,
                                 log=log)
    times["drafter_data_s"] = round(time.time() - t, 1)

    # 4. drafter
    taps = dflash.choose_taps(a.draft_tap_ids, n_layers, a.draft_taps)
    dcfg = dflash.make_config(cfg, a.draft_layers, a.block, mask_id, taps)
    t = time.time()
    accept_reserve = 15 if a.smoke else ACCEPT_RESERVE_S
    train_budget = max(5.0, deadline - time.time() - accept_reserve)
    drafter, dstats = train_drafter(a, dcfg, model, ddata, temps, amp, train_budget, log)
    times["drafter_train_s"] = round(time.time() - t, 1)
    metrics["drafter_config"] = dcfg
    metrics["drafter_train"] = dstats

    # 5. acceptance of what was saved (bf16 weights read back), code then prose
    t = time.time()
    metrics["acceptance"] = {}
    for name, prompts in (("code", code), ("prose", prose)):
        if not prompts:
            continue
        ids = [torch.tensor(p["ids"], device=device) for p in prompts]
        share = 0.7 if name == "code" else 1.0
        res = dflash.measure_acceptance(model, drafter, ids, a.accept_new,
                                        budget_s=max(5.0, share * (deadline - time.time() - 5)), log=log)
        res["set"] = name
        metrics["acceptance"][name] = res
    times["acceptance_s"] = round(time.time() - t, 1)
    times["total_s"] = round(time.time() - T_START, 1)
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    write_card(os.path.join(a.out, "README.md"), metrics)
    code_acc = metrics["acceptance"]["code"]["mean_accepted_length"]
    log(f"done in {time.time() - T_START:.0f}s: mean accepted length {code_acc} on held-out code (block {a.block}, "
        f"temperature 0)")
    if a.bundle:
        write_bundle(a.out, a.bundle)


def write_card(path, m):
    d, tr, acc = m["drafter_config"], m["drafter_train"], m["acceptance"]
    rows = "\n".join(
        f"| {r['set']} | {r['prompts']} | {r['new_tokens_per_prompt']} | {r['mean_accepted_length']} | "
        f"{r['verify_steps']} | {r['greedy_mismatch_prompts']} |" for r in acc.values())
    text = f"""# DFlash drafter for {m['target_file']}

A DFlash block drafter (`saker run --drafter DIR`, `saker serve --drafter DIR`) trained for
`{m['target_file']}` by `tools/train/drafter_for.py`; the target was frozen and its token embedding and output
head are borrowed, so this folder holds only the draft layers.

- {d['num_hidden_layers']} draft layers of the target's shape (hidden {d['hidden_size']}, FFN {d['intermediate_size']}),
  block {d['block_size']}, tapped target layers {d['dflash_config']['target_layer_ids']}, mask token
  {m['mask_token']['id']} ({m['mask_token']['why']}); {tr['params'] / 1e6:.2f}M parameters, BF16
- data: {tr['generated_tokens']} tokens the target generated (temperatures {tr['temperatures']}) from windows of
  Python source installed on the training machine
- training: {tr['steps']} steps in {tr['seconds']} s, final loss {tr['final_loss']}, on {m['environment']['device_name']}
- command: `{m['command']}`

## Acceptance (PyTorch, temperature 0, held-out prompts never trained on)

Mean tokens committed per verify step (accepted drafts plus the target's own token):

| set | prompts | tokens each | mean accepted length | verify steps | prompts where speculative != greedy |
|---|---|---|---|---|---|
{rows}
"""
    with open(path, "w") as f:
        f.write(text)


def run(argv=None):
    a = parse_args(argv)
    try:
        main(argv)
    except BaseException:
        import traceback
        log("FAILED:\n" + traceback.format_exc())
        if a.bundle:
            import shutil
            os.makedirs(a.bundle, exist_ok=True)
            if os.path.exists(os.path.join(a.out, "log.txt")):
                shutil.copy2(os.path.join(a.out, "log.txt"), os.path.join(a.bundle, "log.txt"))
        raise


if __name__ == "__main__":
    run()
