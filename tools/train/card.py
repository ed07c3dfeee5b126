"""The model card (README.md), filled only from the recipe's measured metrics."""


def _fence(text):
    return "```python\n" + text.rstrip("\n") + "\n```"


def _count(n):
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def write(path, m):
    c, tc, tt, ev = m["corpus"], m["target_config"], m["target_train"], m["target_eval"]
    dc, dt, acc, env, times = m["drafter_config"], m["drafter_train"], m["acceptance"], m["environment"], m["times"]
    a = m["args"]
    precision = "bf16 autocast" if env["device"].startswith("cuda") else "float32"
    L = []
    w = L.append
    w("# saker-mini")
    w("")
    if m.get("smoke"):
        w("**Smoke run (toy sizes on the CPU): a pipeline check, not a usable model.**")
        w("")
    w("A small Qwen3-architecture Python code completion model and its DFlash block-diffusion drafter, trained "
      "from scratch by saker's own recipe (`tools/train/`) in one command. It is a plain completion model: no chat "
      "template, no instruction tuning. It exists so that saker's tests and benchmarks have a real model with a "
      "real drafter that fits in the repository.")
    w("")
    w("## Training command")
    w("")
    w(f"    {m['command']}")
    w("")
    if m.get("target_command"):
        w("The tokenizer and the target come from an earlier run of the recipe, whose output folder "
          "`--reuse-target` names (this run redid the evaluation and the drafter):")
        w("")
        w(f"    {m['target_command']}")
        w("")
        w("The two stages ran as two commands with these settings; with the recipe's current defaults one command "
          f"runs both: `python3 tools/train/recipe.py --out OUT --seed {m['seed']}`.")
        w("")
    w(f"Seed {m['seed']}. Environment: Python {env['python']}, torch {env['torch']}, transformers "
      f"{env['transformers']}, tokenizers {env['tokenizers']}, on {env['device_name']}. Wall clock "
      f"{times['total_s']:.0f} s in all (corpus {times['corpus_s']} s, tokenizer {times['tokenizer_train_s']} s, "
      f"tokenizing {times['tokenize_s']} s, target training {times['target_train_s']} s, evaluation and "
      f"references {times['target_eval_s']} s, drafter data {times['drafter_data_s']} s, drafter training "
      f"{times['drafter_train_s']} s, acceptance measurement {times['acceptance_s']} s).")
    w("")
    w("## Corpus")
    w("")
    w(f"Python source files (`.py`) of the training machine's own installation: the standard library of Python "
      f"{c['python']} and every installed package in site-packages / dist-packages. {c['files_found']} files "
      f"found; files under 256 bytes or over 400 KB, not UTF-8, or containing NUL bytes skipped; exact duplicates "
      f"removed by SHA-256 of the content ({c['unique_files']} unique files). Split by file with a seed-keyed hash "
      f"({c['heldout_permille'] / 10:g}% held out), then each split capped (training at "
      f"{c['max_train_bytes'] / 1e6:g} MB) in seed-keyed random file order.")
    w("")
    w("| split | files | bytes | tokens |")
    w("|---|---|---|---|")
    w(f"| train | {c['train_files']} | {c['train_bytes'] / 1e6:.1f} MB | {c['train_tokens'] / 1e6:.2f}M |")
    w(f"| held-out | {c['heldout_files']} | {c['heldout_bytes'] / 1e6:.2f} MB | {c['heldout_tokens'] / 1e6:.3f}M |")
    w("")
    top = ", ".join(f"{name} {b / 1e6:.1f} MB" for name, b in c["top_packages"][:10])
    w(f"Largest sources of the training split: {top}. Near-duplicates (e.g. code copied between model files of one "
      f"package) are not removed, so held-out files can resemble training files: the held-out numbers measure "
      f"in-distribution fit, not generalisation to unseen code.")
    w("")
    w("## Tokenizer")
    w("")
    w(f"Byte-level BPE trained with Hugging Face `tokenizers` on {a['tok_sample_mb']:g} MB of the training split: "
      f"{c['vocab_size']} tokens, Qwen2's pre-tokenizer regex, `<|endoftext|>` = 0 (ends every file; the EOS), "
      f"`<|mask|>` = 1 (the drafter's mask token). {c['bytes_per_token']} bytes per token on the training split.")
    w("")
    w("## Target model")
    w("")
    w(f"`Qwen3ForCausalLM`, {m['target_params'] / 1e6:.2f}M parameters (tied embeddings): hidden "
      f"{tc['hidden_size']}, {tc['num_hidden_layers']} layers, {tc['num_attention_heads']} query / "
      f"{tc['num_key_value_heads']} KV heads of {tc['head_dim']}, FFN {tc['intermediate_size']}, vocabulary "
      f"{tc['vocab_size']}, context {tc['max_position_embeddings']}, RoPE theta {tc['rope_theta']:g}.")
    w("")
    w(f"Training: packed windows of {tt['ctx']} tokens drawn at random offsets of the concatenated training split "
      f"(files joined by `<|endoftext|>`), batch {tt['batch']} x {tt['ctx']}, AdamW (betas 0.9/0.95, weight decay "
      f"{tt['weight_decay']} on matrices), peak learning rate {tt['peak_lr']:g}, {tt['warmup_steps']} warm-up "
      f"steps then cosine to 10%, gradient clip 1.0, {precision}. {tt['steps']} steps, "
      f"{_count(tt['tokens'])} tokens ({tt['epochs']} epochs) in {tt['seconds']:.0f} s, "
      f"{tt['tokens_per_s'] / 1e3:.0f}K tokens/s. Final training loss {tt['final_train_loss']}.")
    w("")
    w("| held-out metric | value |")
    w("|---|---|")
    w(f"| loss (nats/token, {ev['heldout_tokens']} tokens) | {ev['heldout_loss']} |")
    w(f"| perplexity | {ev['heldout_ppl']} |")
    if "heldout_bits_per_byte" in ev:
        w(f"| bits per byte | {ev['heldout_bits_per_byte']} |")
    w(f"| loss in float32 (first {ev['fp32_subset_tokens']} tokens) | {ev['heldout_loss_fp32_subset']} |")
    w("")
    ref = m["reference"]
    w(f"`reference.json` holds {ref['prompts']} held-out prompts with transformers' greedy continuations "
      f"({a['ref_new']} tokens, no EOS stop, computed in float32) of the shipped bf16 weights and of the same "
      f"weights passed through Q8_0 (what the GGUF stores); the two agree on every token for "
      f"{ref['q8_0_identical_to_unquantized']} of {ref['prompts']} prompts. Each entry records its smallest "
      f"top-2 logit margin: near-ties are fragile.")
    w("")
    w("## Sample completions (held-out prompts, greedy)")
    w("")
    for s in m["samples"]:
        w("Prompt:")
        w("")
        w(_fence(s["prompt"]))
        w("")
        w("Completion:")
        w("")
        w(_fence(s["completion"]))
        w("")
    w("## DFlash drafter (`drafter/`)")
    w("")
    dfc = dc["dflash_config"]
    w(f"{dc['num_hidden_layers']} Qwen3-style draft layers of hidden size {dc['hidden_size']} (FFN "
      f"{dc['intermediate_size']}), block size {dc['block_size']}, tapped target layers {dfc['target_layer_ids']} "
      f"(0-based), mask token {dfc['mask_token_id']}; no embedding or head of its own (it uses the target's). "
      f"{dt['params'] / 1e6:.2f}M parameters, stored bf16 in `model.safetensors` with `config.json` "
      f"(`architectures: [\"DFlashDraftModel\"]`, `dflash_config`).")
    w("")
    w(f"Training data: the target's own continuations of {dt['sequences']} random training-split windows "
      f"({a['gen_prompt']} prompt tokens + {a['gen_new']} generated, temperatures {dt['temperatures']} taken in "
      f"turn by batch; {dt['generated_tokens'] / 1e6:.2f}M generated tokens). Training: target frozen; per sequence "
      f"{dt['anchors_per_seq']} random anchors in the generated part, each a block [token, mask x "
      f"{dc['block_size'] - 1}] that sees the fused target features of earlier positions and its own block; "
      f"offset k predicts token a+k with weight exp(-(k-1)/{dt['gamma']:g}); AdamW, peak learning rate "
      f"{dt['peak_lr']:g}, 4% warm-up, cosine, clip 1.0; batch {dt['batch']} sequences, {dt['steps']} steps in "
      f"{dt['seconds']:.0f} s; final weighted loss {dt['final_loss']}.")
    w("")
    w("### Mean accepted length")
    w("")
    w(f"**{acc['mean_accepted_length']} tokens per verify step** (accepted drafts + the target's own token; "
      f"{acc['mean_accepted_drafts']} accepted drafts), temperature 0, block {acc['block_size']}, over "
      f"{acc['verify_steps']} verify steps on {acc['prompts']} held-out prompts ({acc['new_tokens_per_prompt']} "
      f"new tokens each). Measured in PyTorch by the recipe: the drafter (its saved bf16 weights, in float32) "
      f"proposes a block from the pending token, the float32 target verifies it greedily, the accepted prefix and "
      f"the target's next token are committed. Speculative output differed from plain greedy output on "
      f"{acc['greedy_mismatch_prompts']} prompts. Tokens per step, 1..{acc['block_size']}: "
      f"{acc['histogram_tokens_per_step']}.")
    w("")
    w("Re-measure (OUT = the recipe's output folder):")
    w("")
    w(f"    {acc['command']}")
    w("")
    sp = m.get("saker_speculative")
    if sp:
        w(f"Measured by saker itself (`saker run --drafter drafter`, CPU, the Q8_0 GGUF as target, "
          f"{sp['kernels']}; {sp['saker']} on {sp['cpu']}): **{sp['mean_accepted_length']} tokens per verify "
          f"step** over {sp['verify_steps']} verify steps on the same {sp['prompts']} prompts "
          f"({sp['new_tokens_per_prompt']} new tokens each); speculative output differed from saker's plain greedy "
          f"output on {sp['greedy_mismatch_prompts']} prompts. Tokens per step, 1..{len(sp['histogram_tokens_per_step'])}: "
          f"{sp['histogram_tokens_per_step']}. Command: `{sp['command']}`.")
        w("")
    target_len = 3.0
    if acc["mean_accepted_length"] < target_len:
        w(f"**This is below the {target_len:.1f} tokens per verify step that saker-mini's drafter is meant to "
          f"reach**: the drafter must be retrained before it serves as the reference drafter. The tokenizer and "
          f"the target stay; only the drafter data, the drafter and the acceptance measurement are redone, with a "
          f"longer drafter budget. On the GPU machine, from the repository root, with this run's output folder at "
          f"runs/saker-mini:")
        w("")
        w(f"    PYTHONUNBUFFERED=1 python3 tools/train/recipe.py --reuse-target runs/saker-mini "
          f"--out runs/saker-mini-2 --seed {m['seed']} --minutes-drafter {a['minutes_drafter'] * 1.5:g}")
        w("")
        w("then `python3 tools/train/package.py --run runs/saker-mini-2` where saker is built. A longer budget is "
          "not guaranteed to reach the target; the acceptance it reaches is what the new card will report.")
        w("")
    chk = m.get("saker_check")
    if chk:
        w("## saker check")
        w("")
        where = f" ({chk['saker']} on {chk['cpu']})" if chk.get("cpu") else ""
        w(f"saker's CPU backend on the Q8_0 GGUF{where}, greedy, first {chk['tokens']} tokens of each of the "
          f"{chk['prompts']} reference prompts, against transformers' continuation of the same Q8_0 weights:")
        w("")
        if "identical_to_q8_0_reference_ref_ops" in chk:
            w(f"- `--ref-ops` (float activations): **{chk['identical_to_q8_0_reference_ref_ops']} of "
              f"{chk['prompts']} identical**")
        w(f"- default kernels (Q8_0 weights times activations rounded to 8-bit blocks): "
          f"**{chk['identical_to_q8_0_reference']} of {chk['prompts']} identical**")
        w(f"- ({chk['identical_to_unquantized_reference']} of {chk['prompts']} identical to transformers' "
          f"continuation of the unquantized bf16 weights)")
        w("")
        diff = [(i, r) for i, r in enumerate(chk["rows"]) if not r["match_q8_0"]]
        if diff:
            w("Where the default kernels differ:")
            w("")
            w("| prompt | first differing token | smallest top-2 margin of the reference (logits) |")
            w("|---|---|---|")
            for i, r in diff:
                w(f"| {i} | {r['first_divergence_q8_0']} | {r['min_margin_q8_0']} |")
            w("")
            if all(r["min_margin_q8_0"] < chk.get("near_tie", 0.01) for _, r in diff):
                w(f"Each of these prompts has a near-tie (margin under {chk.get('near_tie', 0.01)}) in its "
                  f"reference: the 8-bit rounding of the activations is enough to flip it, after which greedy "
                  f"decoding follows another path. Which near-ties flip depends on the CPU's vector path (the "
                  f"order in which block products are summed); the golden test checks on the machine it runs on "
                  f"that every divergence is a near-tie in saker's own logits too.")
                w("")
        w(f"Command: `{chk['command']}`.")
        w("")
    samples = m.get("saker_samples")
    if samples:
        w("## saker run")
        w("")
        w("Completions by saker itself (CPU, greedy) of prompts outside the held-out set, exactly as printed:")
        w("")
        for sm in samples:
            w(f"    {sm['command']}")
            w("")
            w(_fence(sm["output"]))
            w("")
            if sm.get("output_ref_ops") not in (None, sm["output"]):
                w("With `--ref-ops` (float activations) the completion differs:")
                w("")
                w(_fence(sm["output_ref_ops"]))
                w("")
    w("## Files")
    w("")
    g = m.get("gguf") or {}
    if g.get("ok"):
        w(f"- `{g['path']}`: the target, `{g['command']}` ({g['bytes'] / 1e6:.1f} MB)")
    else:
        w("- `saker-mini-q8_0.gguf`: the target, `saker convert OUT/hf -o saker-mini-q8_0.gguf --type q8_0`")
    w("- `tokenizer.json`, `tokenizer_config.json`: the tokenizer")
    w("- `drafter/`: the DFlash drafter")
    w("- `metrics.json`: every number above; `reference.json`: greedy references; `heldout_prompts.json`: the "
      "acceptance prompts")
    w("- the Hugging Face folder (`hf/`, bf16) stays in the recipe's output folder: it is too large to commit")
    w("")
    with open(path, "w") as f:
        f.write("\n".join(L))
