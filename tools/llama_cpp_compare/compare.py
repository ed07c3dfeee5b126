#!/usr/bin/env python3
"""Compare saker with llama.cpp on a real model file: greedy chat continuations and next-token KL.

Needs a llama.cpp oracle program (see README.md next to this script) that offers
  ORACLE tokenize MODEL TEXTFILE, ORACLE greedy MODEL N IDSFILE, ORACLE logits MODEL IDSFILE OUT.bin.
Writes the figures to stdout and, with --write-data, the reference data the golden test reads
(tests/data/llama_cpp/NAME.json): prompt ids, llama.cpp's greedy ids, the KL text's ids and llama.cpp's top-k
log-probabilities at every position.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about mountains.",
    "Explain in two sentences why the sky is blue.",
    "List three fruits that are red.",
    "What is 12 plus 30?",
    "Give me a short tip for learning to cook.",
    "Translate 'good morning' into Spanish.",
    "Who wrote the play Romeo and Juliet?",
    "Describe a cat to someone who has never seen one.",
    "Write one sentence about the ocean.",
]

FORMATS = {
    # SmolLM2's template: a default system turn when the first message is not one.
    "chatml-smollm": lambda q: ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                                "Face<|im_end|>\n<|im_start|>user\n" + q + "<|im_end|>\n<|im_start|>assistant\n"),
    "gemma": lambda q: "<bos><start_of_turn>user\n" + q + "<end_of_turn>\n<start_of_turn>model\n",
    # Qwen2.5's template: its default system turn when the first message is not one.
    "chatml-qwen": lambda q: ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                              "assistant.<|im_end|>\n<|im_start|>user\n" + q + "<|im_end|>\n<|im_start|>assistant\n"),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def saker_tokenize(saker, model, text):
    out = subprocess.run([saker, "tokenize", "-m", model, "--ids"], input=text.encode(), check=True,
                         capture_output=True).stdout.decode()
    return [int(x) for x in out.split()]


def oracle_tokenize(oracle, model, text, tmp):
    p = os.path.join(tmp, "text.txt")
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    return [int(x) for x in run([oracle, "tokenize", model, p]).split()]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--saker", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--format", required=True, choices=sorted(FORMATS))
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--n-text", type=int, default=2000)
    ap.add_argument("--n-predict", type=int, default=64)
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--write-data")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    data = {"model": os.path.basename(a.model), "format": a.format, "n_predict": a.n_predict, "prompts": []}

    # Tokenizer agreement and greedy continuations.
    prompt_ids = []
    for q in PROMPTS:
        text = FORMATS[a.format](q)
        s_ids = saker_tokenize(a.saker, a.model, text)
        o_ids = oracle_tokenize(a.oracle, a.model, text, tmp)
        if s_ids != o_ids:
            print(f"TOKENIZER MISMATCH on {q!r}:\n saker {s_ids}\n llama {o_ids}")
        prompt_ids.append(o_ids)
    ids_file = os.path.join(tmp, "prompts.txt")
    with open(ids_file, "w") as f:
        for p in prompt_ids:
            f.write(" ".join(map(str, p)) + "\n")
    o_gen = [[int(x) for x in line.split()] for line in run([a.oracle, "greedy", a.model, str(a.n_predict), ids_file]).splitlines()]
    n_same = 0
    for q, p, og in zip(PROMPTS, prompt_ids, o_gen):
        out = run([a.saker, "run", "-m", a.model, "--prompt-ids", " ".join(map(str, p)), "-n", str(a.n_predict),
                   "--temp", "0", "--print-ids"])
        sg = [int(x) for x in out.strip().splitlines()[-1].removeprefix("ids:").split()]
        same = sg == og
        n_same += same
        first = next((i for i, (x, y) in enumerate(zip(sg, og)) if x != y), min(len(sg), len(og)))
        print(f"{'same' if same else 'DIFF'} {len(sg):3d}/{len(og):3d} tokens, first difference at {first if not same else '-'}: {q}")
        if not same:
            print("  saker:", sg)
            print("  llama:", og)
        data["prompts"].append({"question": q, "prompt_ids": p, "llama_cpp_ids": og})
    print(f"greedy: {n_same}/{len(PROMPTS)} identical")

    # KL divergence on a long text.
    with open(a.text, encoding="utf-8") as f:
        text = f.read()
    t_ids = oracle_tokenize(a.oracle, a.model, text, tmp)
    s_ids = saker_tokenize(a.saker, a.model, text)
    print("text tokenization:", "identical" if t_ids == s_ids else f"DIFFERENT ({len(t_ids)} vs {len(s_ids)})")
    if a.format == "gemma":
        t_ids = [2] + t_ids  # BOS, as the model expects
    t_ids = t_ids[: a.n_text]
    tf = os.path.join(tmp, "text_ids.txt")
    with open(tf, "w") as f:
        f.write(" ".join(map(str, t_ids)) + "\n")
    ob, sb = os.path.join(tmp, "llama.bin"), os.path.join(tmp, "saker.bin")
    run([a.oracle, "logits", a.model, tf, ob])
    run([a.saker, "run", "-m", a.model, "--prompt-ids", " ".join(map(str, t_ids)), "-c", str(len(t_ids) + 8),
         "--logits-out", sb])
    n = len(t_ids)
    lo = np.memmap(ob, dtype=np.float32, mode="r").reshape(n, -1)
    ls = np.memmap(sb, dtype=np.float32, mode="r").reshape(n, -1)
    kl = np.empty(n)
    top_o, top_s = lo.argmax(-1), ls.argmax(-1)
    tops = []
    nll_o = nll_s = 0.0
    for i in range(n):  # row by row in float64: a 262k vocabulary makes whole-array copies gigabytes
        po, ps = log_softmax(lo[i]), log_softmax(ls[i])
        kl[i] = float((np.exp(po) * (po - ps)).sum())
        k = np.argsort(-po)[: a.top_k]
        tops.append({"ids": k.tolist(), "logprobs": [round(float(po[j]), 5) for j in k]})
        if i + 1 < n:
            nll_o -= po[t_ids[i + 1]] / (n - 1)
            nll_s -= ps[t_ids[i + 1]] / (n - 1)
    figures = {
        "n_tokens": n,
        "kl_mean": float(kl.mean()),
        "kl_p99": float(np.percentile(kl, 99)),
        "kl_max": float(kl.max()),
        "top1_agreement": float((top_o == top_s).mean()),
        "ppl_llama_cpp": float(np.exp(nll_o)),
        "ppl_saker": float(np.exp(nll_s)),
        "greedy_identical": n_same,
    }
    del lo, ls
    os.remove(ob)
    os.remove(sb)
    print(json.dumps(figures, indent=1))
    if a.write_data:
        data["kl_text"] = {"source": a.text, "ids": t_ids, "top_k": tops}
        data["figures"] = figures
        with open(a.write_data, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
