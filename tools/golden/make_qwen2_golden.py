#!/usr/bin/env python3
"""Reference data for saker's Qwen2 golden test, made with Hugging Face transformers.

A small random-weight Qwen2ForCausalLM (Qwen2.5's layout: biases on the q, k and v projections, no q/k norm),
saved and referenced exactly as make_qwen3_golden.py does for Qwen3 (same reference.safetensors tensors);
the biases are randomised as well as the norms.

Runs on the CPU (deterministic; no TF32). Usage: python3 make_qwen2_golden.py OUT_DIR
"""
import pathlib
import sys

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from make_qwen3_golden import build

MODELS = {
    # tied head (as in Qwen2.5 0.5B-3B); head_dim = hidden / heads = 32; GQA ratio 2 (4 query heads, 2 KV heads)
    "qwen2-tied": dict(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=256, tie_word_embeddings=True),
}
COMMON = dict(max_position_embeddings=1024, rms_norm_eps=1e-6, rope_theta=1000000.0, initializer_range=0.25,
              bos_token_id=1, eos_token_id=2, pad_token_id=0, use_sliding_window=False, torch_dtype="float32")


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "golden-out")
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(8)
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for i, name in enumerate(MODELS):
        build(name, seed=2234 + i, out_dir=out_dir, config_cls=Qwen2Config, model_cls=Qwen2ForCausalLM,
              models=MODELS, common=COMMON)


if __name__ == "__main__":
    main()
