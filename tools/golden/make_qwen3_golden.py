#!/usr/bin/env python3
"""Reference data for saker's Qwen3 golden tests, made with Hugging Face transformers.

Builds small random-weight Qwen3 models from configs (fixed seeds), saves each with save_pretrained
(safetensors, float32), and writes reference.safetensors beside it:
  input_ids        I32 [64]        fixed token ids
  logits           F32 [64, vocab] logits of every position, computed in float64 from the float32 weights
  logits_f32       F32 [64, vocab] the same computed in float32 (how far fp32 rounding moves them)
  greedy_prompt    I32 [8]
  greedy_tokens    I32 [32]        transformers' greedy generate() continuation (float64)
  greedy_margin    F32 [32]        top-1 minus top-2 logit at each greedy step (near-ties are fragile)

Runs on the CPU (deterministic; no TF32). Usage: python3 make_qwen3_golden.py OUT_DIR
"""
import json
import pathlib
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

MODELS = {
    # tied head; head_dim 64 != hidden/heads = 32; GQA ratio 4 (4 query heads, 1 KV head)
    "qwen3-tied": dict(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=1, head_dim=64, intermediate_size=256, tie_word_embeddings=True),
    # untied head; head_dim 32 != hidden/heads = 16; GQA ratio 4 (8 query heads, 2 KV heads)
    "qwen3-untied": dict(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=8,
                         num_key_value_heads=2, head_dim=32, intermediate_size=256, tie_word_embeddings=False),
}
COMMON = dict(max_position_embeddings=1024, rms_norm_eps=1e-6, rope_theta=1000000.0, initializer_range=0.25,
              bos_token_id=1, eos_token_id=2, pad_token_id=0, attention_bias=False, torch_dtype="float32")


def build(name: str, seed: int, out_dir: pathlib.Path, config_cls=Qwen3Config, model_cls=Qwen3ForCausalLM,
          models=MODELS, common=COMMON):
    torch.manual_seed(seed)
    cfg = config_cls(**models[name], **common)
    model = model_cls(cfg).eval().float()
    # Norm weights are ones and biases (Qwen2's q/k/v projections) zeros at init; randomise them so a wrong
    # norm or a missing bias cannot pass unnoticed.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif n.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
    folder = out_dir / name
    model.save_pretrained(folder, safe_serialization=True)

    g = torch.Generator().manual_seed(seed + 100)
    ids = torch.randint(3, cfg.vocab_size, (1, 64), generator=g)
    with torch.no_grad():
        logits32 = model(ids).logits[0].float()
        m64 = model_cls(cfg).eval()
        m64.load_state_dict(model.state_dict())
        m64 = m64.double()
        logits64 = m64(ids).logits[0]
        prompt = ids[:, :8]
        gen = m64.generate(prompt, max_new_tokens=32, do_sample=False, eos_token_id=None, pad_token_id=0,
                           output_scores=True, return_dict_in_generate=True, min_new_tokens=32)
    tokens = gen.sequences[0, 8:]
    margins = []
    for s in gen.scores:
        top2 = torch.topk(s[0], 2).values
        margins.append(float(top2[0] - top2[1]))
    save_file({
        "input_ids": ids[0].to(torch.int32).contiguous(),
        "logits": logits64.float().contiguous(),
        "logits_f32": logits32.contiguous(),
        "greedy_prompt": prompt[0].to(torch.int32).contiguous(),
        "greedy_tokens": tokens.to(torch.int32).contiguous(),
        "greedy_margin": torch.tensor(margins, dtype=torch.float32),
    }, str(folder / "reference.safetensors"))
    rel = float((logits32.double() - logits64).norm() / logits64.norm())
    print(json.dumps({"model": name, "params": sum(p.numel() for p in model.parameters()),
                      "fp32_vs_fp64_rel_err": rel, "min_greedy_margin": min(margins),
                      "greedy": tokens.tolist()}))


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "golden-out")
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(8)
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for i, name in enumerate(MODELS):
        build(name, seed=1234 + i, out_dir=out_dir)


if __name__ == "__main__":
    main()
