"""tools/train (the saker-mini recipe): the DFlash pieces and the Q8_0 model saker is compared against.

Needs torch, transformers and tokenizers; skipped (saying so) where they are not installed, as in CI.
"""
import json
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the training recipe's tests are skipped")
pytest.importorskip("transformers", reason="transformers is not installed: the training recipe's tests are skipped")
pytest.importorskip("safetensors", reason="safetensors is not installed: the training recipe's tests are skipped")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "train"))
import dflash  # noqa: E402
import lm  # noqa: E402


def tiny_target(seed=0):
    torch.manual_seed(seed)
    cfg = lm.make_config(vocab_size=96, hidden=64, layers=4, heads=2, kv_heads=1, head_dim=32, ffn=128, ctx=256,
                         rope_theta=10000.0, eos_id=0)
    return lm.build_model(cfg, torch.device("cpu")).eval(), cfg


def test_default_taps_follow_the_dflash_rule():
    assert dflash.default_taps(36, 5) == [1, 9, 17, 25, 33]
    assert dflash.default_taps(8, 3) == [1, 3, 5]
    assert dflash.default_taps(8, 1) == [4]
    assert dflash.spread_taps(8, 3) == [1, 4, 6]
    assert dflash.spread_taps(4, 2) == [1, 2]
    # never the last layer (HF gives its hidden state after the final norm)
    assert max(dflash.default_taps(8, 3)) <= 8 - 2 and max(dflash.spread_taps(8, 3)) <= 8 - 2


def test_block_mask_sees_earlier_context_and_its_own_block_only():
    B, L = 4, 10
    tokens = torch.arange(L)[None]
    anchors = torch.tensor([[3, 6]])
    blk, pos, lab, anc = dflash.block_inputs(tokens, anchors, B, mask_id=99)
    assert blk.tolist() == [[3, 99, 99, 99, 6, 99, 99, 99]]
    assert pos.tolist() == [[3, 4, 5, 6, 6, 7, 8, 9]]
    assert lab.tolist() == [[-100, 4, 5, 6, -100, 7, 8, 9]]
    m = dflash.block_mask(anc, L, B)[0, 0]
    assert m.shape == (8, L + 8)
    assert m[0, :L].tolist() == [True] * 3 + [False] * 7  # anchor 3 sees positions 0..2
    assert m[5, :L].tolist() == [True] * 6 + [False] * 4  # anchor 6 sees positions 0..5
    assert m[1, L:].tolist() == [True] * 4 + [False] * 4  # its own block, bidirectionally
    assert m[7, L:].tolist() == [False] * 4 + [True] * 4


def test_speculative_greedy_equals_plain_greedy_and_counts_steps():
    target, cfg = tiny_target()
    torch.manual_seed(1)
    drafter = dflash.DFlashDrafter(dflash.make_config(cfg, 1, 16, 1, dflash.default_taps(4, 2))).eval()
    prompt = torch.randint(2, 96, (12,))
    toks, per_step = dflash.spec_decode_greedy(target, drafter, prompt, 40)
    plain, _ = lm.generate(target, prompt[None], 40)
    assert toks == plain[0].tolist()
    assert sum(per_step) >= 40 and all(1 <= n <= 16 for n in per_step)


def test_drafter_training_step_and_save_format(tmp_path):
    target, cfg = tiny_target()
    torch.manual_seed(2)
    drafter = dflash.DFlashDrafter(dflash.make_config(cfg, 2, 16, 1, dflash.default_taps(4, 2)))
    data = torch.randint(2, 96, (6, 48))
    stats = dflash.train(drafter, target, data, prompt_len=8, batch=2, anchors=4, budget_s=60, peak_lr=1e-3,
                         gamma=7.0, seed=0, amp_dtype=torch.float32, max_steps=3, log=lambda m: None)
    assert stats["steps"] == 3 and stats["final_loss"] > 0
    dflash.save(drafter, tmp_path / "d")
    c = json.loads((tmp_path / "d" / "config.json").read_text())
    assert c["architectures"] == ["DFlashDraftModel"] and c["block_size"] == 16
    assert c["dflash_config"] == {"mask_token_id": 1, "target_layer_ids": dflash.default_taps(4, 2)}
    from safetensors import safe_open
    with safe_open(str(tmp_path / "d" / "model.safetensors"), "pt") as f:
        names = set(f.keys())
        assert f.get_slice("fc.weight").get_shape() == [64, 64 * len(c["dflash_config"]["target_layer_ids"])]
        assert f.get_slice("fc.weight").get_dtype() == "BF16"
    per_layer = {"input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                 "self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm", "mlp.gate_proj",
                 "mlp.up_proj", "mlp.down_proj"}
    want = {"fc.weight", "hidden_norm.weight", "norm.weight"}
    want |= {f"layers.{i}.{p}.weight" for i in range(2) for p in per_layer}
    assert names == want
    back = dflash.load(tmp_path / "d", torch.device("cpu"))
    assert torch.equal(back.fc.weight, drafter.fc.weight.detach().to(torch.bfloat16).float())


def test_q8_0_roundtrip_is_llama_cpp_q8_0():
    w = torch.randn(4, 64) * 0.05
    w[0, :32] = 0.0  # an all-zero block keeps zeros
    r = lm.q8_0_roundtrip(w)
    assert torch.equal(r[0, :32], torch.zeros(32))
    blk = w[1, :32]
    d = blk.abs().max() / 127
    q = torch.round(blk / d)  # no exact .5 ties in random data
    assert torch.allclose(r[1, :32], q * d.half().float())
    assert (r - w).abs().max() <= w.abs().max() / 127
