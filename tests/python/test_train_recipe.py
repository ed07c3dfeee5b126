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


class _FakeTokenizer:
    """The parts of an HF tokenizer drafter_for's mask-token rule reads."""

    def __init__(self, n, specials, template, bos=None, eos=None, pad=None):
        self.n, self.names = n, specials  # {id: text}
        self.chat_template = template
        self.bos_token_id, self.eos_token_id, self.pad_token_id, self.unk_token_id = bos, eos, pad, None
        self.all_special_ids = list(specials)
        self.added_tokens_decoder = {}

    def __len__(self):
        return self.n

    def convert_ids_to_tokens(self, i):
        return self.names[i]


class _FakeModel:
    def __init__(self, rows):
        self.rows = rows

    def get_input_embeddings(self):
        return torch.nn.Embedding(self.rows, 4)


def test_drafter_for_picks_a_mask_token_the_target_never_uses():
    import drafter_for
    specials = {0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>", 5: "<file_sep>", 9: "<empty_output>"}
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    tok = _FakeTokenizer(50, specials, template, bos=0, eos=2)
    # A padded embedding: the first row past the tokenizer.
    assert drafter_for.choose_mask_token(_FakeModel(64), tok, None)[0] == 50
    # No padding: the highest-id special token that is not BOS/EOS/padding and not in the chat template.
    mask, why = drafter_for.choose_mask_token(_FakeModel(50), tok, None)
    assert mask == 9 and "<empty_output>" in why
    tok.names[9] = "<|im_start|>x"  # a special that the template does not contain, still
    assert drafter_for.choose_mask_token(_FakeModel(50), tok, None)[0] == 9
    assert drafter_for.choose_mask_token(_FakeModel(50), tok, 7) == (7, "--mask-token")
    with pytest.raises(SystemExit):
        drafter_for.choose_mask_token(_FakeModel(50), tok, 50)
    bare = _FakeTokenizer(3, {0: "a", 1: "<|im_start|>", 2: "b"}, template, bos=0, eos=2)
    with pytest.raises(SystemExit):  # nothing left to choose
        drafter_for.choose_mask_token(_FakeModel(3), bare, None)


def test_drafter_for_mask_token_falls_back_to_an_id_the_corpus_never_uses():
    # A GGUF's tokenizer as transformers builds it: its vocabulary padded with tokens of its own (no embedding
    # rows past it), no spare special token. The last rule takes the highest id the corpus never uses that is
    # not BOS / EOS / padding.
    import drafter_for
    names = {i: f"t{i}" for i in range(8)}
    names.update({0: "<|endoftext|>", 6: "[PAD6]", 7: "[PAD7]"})
    tok = _FakeTokenizer(8, {0: "<|endoftext|>"}, "{{ m.content }}", bos=0, eos=0, pad=7)
    tok.names = names
    corpus = torch.tensor([1, 2, 2, 3, 5, 1])
    mask, why = drafter_for.choose_mask_token(_FakeModel(8), tok, None, corpus)
    assert mask == 6 and "[PAD6]" in why and "6 training tokens" in why
    with pytest.raises(SystemExit):  # every id used or reserved
        drafter_for.choose_mask_token(_FakeModel(8), tok, None, torch.tensor([1, 2, 3, 4, 5, 6]))


def test_drafter_for_refuses_a_budget_that_leaves_no_training():
    import argparse
    import drafter_for
    a = argparse.Namespace(smoke=False, draft_steps=None, gen_share=0.3, minutes=3.0)
    # The run that taught it: 131 s of loading on the GPU machine left 49 s of a 3-minute budget.
    with pytest.raises(SystemExit) as e:
        drafter_for.check_budget(a, remaining_s=49.0, spent_s=131.0)
    msg = str(e.value)
    assert "--minutes 3 leaves about 0 s" in msg and "give --minutes 4.5 or more" in msg
    # What it asks for is enough: that run at 4.5 minutes.
    drafter_for.check_budget(a, remaining_s=4.5 * 60 - 131.0, spent_s=131.0)
    drafter_for.check_budget(argparse.Namespace(**{**vars(a), "smoke": True}), 49.0, 131.0)
    drafter_for.check_budget(argparse.Namespace(**{**vars(a), "draft_steps": 5}), 49.0, 131.0)


def test_head_loss_in_chunks_equals_the_whole_head():
    torch.manual_seed(3)
    head = torch.nn.Linear(16, 40, bias=False)
    h = torch.randn(11, 16, requires_grad=True)
    labels = torch.randint(0, 40, (11,))
    weights = torch.rand(11)
    whole = (torch.nn.functional.cross_entropy(head(h), labels, reduction="none") * weights).sum() / weights.sum()
    g_whole = torch.autograd.grad(whole, (h, head.weight))
    chunked = dflash.head_loss(head, h, labels, weights, chunk_rows=3)
    g_chunked = torch.autograd.grad(chunked, (h, head.weight))
    assert torch.allclose(chunked, whole, rtol=1e-6, atol=1e-6)
    for a, b in zip(g_chunked, g_whole):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_drafter_training_halves_a_batch_the_device_cannot_hold(monkeypatch):
    target, cfg = tiny_target()
    torch.manual_seed(2)
    drafter = dflash.DFlashDrafter(dflash.make_config(cfg, 1, 16, 1, dflash.default_taps(4, 2)))
    data = torch.randint(2, 96, (6, 48))
    real, seen = dflash.head_loss, []

    def small_device(head, h, *args, **kw):  # a device that holds the labelled rows of one sequence at most
        seen.append(h.shape[0])
        if h.shape[0] > 4 * 15:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(head, h, *args, **kw)

    monkeypatch.setattr(dflash, "head_loss", small_device)
    logs = []
    stats = dflash.train(drafter, target, data, prompt_len=8, batch=4, anchors=4, budget_s=60, peak_lr=1e-3,
                         gamma=7.0, seed=0, amp_dtype=torch.float32, max_steps=3, log=logs.append)
    assert stats["steps"] == 3 and stats["batch"] == 1
    assert "4 sequences a step do not fit in device memory; trying 2" in logs[0]
    assert "2 sequences a step do not fit in device memory; trying 1" in logs[1]


def test_drafter_for_prose_prompts_are_docstring_openings():
    import random
    import drafter_for

    class Words:
        def encode(self, text, add_special_tokens=False):
            return drafter_for.TokenizerIds._Ids(text.split())

    words = ["the", "parser", "reads", "each", "line", "and", "keeps", "what", "follows"]
    doc = " ".join(words[i % len(words)] for i in range(120))
    texts = [f'"""{doc}"""\nx = 1\n', "def f():\n    return 1\n", '"""short"""\n']
    out = drafter_for.pick_prose(texts, Words(), 5, random.Random(0), 32, 128)
    assert len(out) == 1
    assert len(out[0]["ids"]) == 32 and out[0]["text"].startswith("the parser reads")
