"""The target: a Qwen3ForCausalLM trained from scratch on packed token streams, time-budgeted."""
import inspect
import math
import time

import torch
import torch.nn.functional as F
from transformers import Qwen3Config, Qwen3ForCausalLM


def make_config(vocab_size, hidden, layers, heads, kv_heads, head_dim, ffn, ctx, rope_theta, eos_id):
    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim, max_position_embeddings=ctx,
        rms_norm_eps=1e-6, rope_theta=rope_theta, tie_word_embeddings=True, attention_bias=False,
        attention_dropout=0.0, hidden_act="silu", initializer_range=0.02, use_cache=True,
        bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id, use_sliding_window=False)


def build_model(config, device):
    model = Qwen3ForCausalLM(config)
    # transformers 5 may ignore the attn_implementation kwarg of the constructor; set it on the config.
    model.config._attn_implementation = "sdpa"
    return model.to(device)


def count_params(model):
    """Unique parameters (the tied lm_head counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


def lr_at(step, total, peak, warmup, min_ratio=0.1):
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


def _batch(stream, batch, ctx, gen):
    starts = torch.randint(0, stream.numel() - ctx - 1, (batch,), generator=gen)
    idx = starts[:, None] + torch.arange(ctx + 1)[None, :]
    return stream[idx.to(stream.device)].long()


def train(model, stream, *, batch, ctx, budget_s, peak_lr, weight_decay, warmup_steps, seed, device, amp_dtype,
          max_steps=None, calib_steps=10, log_every=50, log=print):
    """Trains on random windows of the packed train stream until `budget_s` seconds (or `max_steps`).

    The cosine schedule needs the step count up front: the loop times the first warm-up steps and fixes the
    total from the measured step time (or takes max_steps). Returns a dict of training statistics.
    """
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.ndim >= 2 else no_decay).append(p)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=peak_lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=fused)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    total = max_steps
    step, t0 = 0, time.time()
    losses, curve = [], []
    tokens_per_step = batch * ctx
    t_last, step_last = t0, 0

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    while True:
        if total is not None and step >= total:
            break
        lr = lr_at(step, total if total else 10 ** 9, peak_lr, warmup_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        xy = _batch(stream, batch, ctx, gen)
        x, y = xy[:, :-1], xy[:, 1:]
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            logits = model(input_ids=x, use_cache=False).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 10 == 0 or step <= calib_steps:
            losses.append((step, loss.item()))
        if max_steps is None and step in (calib_steps, 6 * calib_steps):
            # timed twice: the first steps include allocator / kernel warm-up; the second estimate (still inside
            # the warm-up, before the cosine starts) uses the steady-state rate since the first
            sync()
            now = time.time()
            if step == calib_steps:
                per_step, t_calib = (now - t0) / step, now
            else:
                per_step = (now - t_calib) / (step - calib_steps)
            total = max(step + 1, step + int((budget_s - (now - t0)) / per_step))
            log(f"target: {per_step * 1000:.0f} ms/step after {step} steps -> {total} steps in {budget_s:.0f} s")
        if step % log_every == 0:
            sync()
            now = time.time()
            tps = (step - step_last) * tokens_per_step / (now - t_last)
            t_last, step_last = now, step
            l = loss.item()
            curve.append(dict(step=step, seconds=round(now - t0, 1), loss=round(l, 4), lr=lr))
            log(f"target: step {step}/{total} loss {l:.4f} lr {lr:.2e} {tps / 1e3:.0f}K tok/s "
                f"{now - t0:.0f}s")
            # a slower-than-measured machine must not overrun its time: stop at 110% of the budget
            if max_steps is None and now - t0 > 1.1 * budget_s:
                log("target: time budget exceeded, stopping early")
                break
    sync()
    seconds = time.time() - t0
    tail = [l for s, l in losses[-10:]]
    return dict(steps=step, planned_steps=total, seconds=round(seconds, 1), batch=batch, ctx=ctx,
                tokens=step * tokens_per_step, tokens_per_s=round(step * tokens_per_step / seconds),
                final_train_loss=round(sum(tail) / max(1, len(tail)), 4), peak_lr=peak_lr,
                weight_decay=weight_decay, warmup_steps=warmup_steps, curve=curve)


@torch.no_grad()
def evaluate(model, stream, ctx, batch, max_tokens, device, amp_dtype, n_bytes=None):
    """Mean next-token loss over non-overlapping ctx-token windows of the held-out stream."""
    model.eval()
    n_win = min((stream.numel() - 1) // ctx, max(1, max_tokens // ctx))
    tot, cnt = 0.0, 0
    for i in range(0, n_win, batch):
        idx = torch.arange(i, min(n_win, i + batch))[:, None] * ctx + torch.arange(ctx + 1)[None, :]
        xy = stream[idx.to(stream.device)].long()
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            logits = model(input_ids=xy[:, :-1], use_cache=False).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), xy[:, 1:].reshape(-1), reduction="sum")
        tot += loss.item()
        cnt += xy[:, 1:].numel()
    mean = tot / cnt
    out = dict(heldout_tokens=cnt, heldout_loss=round(mean, 4), heldout_ppl=round(math.exp(mean), 3))
    if n_bytes:  # bits per byte over the evaluated share of the stream
        out["heldout_bits_per_byte"] = round(tot / math.log(2) / (n_bytes * cnt / (stream.numel() - 1)), 4)
    return out


def _cache_kwarg(model):
    """transformers renamed the KV-cache argument `past_key_values` to `cache` during 5.x."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


@torch.no_grad()
def generate(model, prompt_ids, n_new, temperature=0.0, gen=None, amp_dtype=torch.float32, want_margins=False):
    """Greedy (temperature 0) or sampled continuation with the KV cache; never stops early (no EOS stop).

    prompt_ids: LongTensor [B, P] on the model's device. Returns ([B, n_new] tokens, margins or None).
    """
    model.eval()
    dev = prompt_ids.device
    out_tokens, margins = [], []
    kw = _cache_kwarg(model)
    with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
        out = model(input_ids=prompt_ids, use_cache=True)
        past = _cache_of(out)
        for i in range(n_new):
            logits = out.logits[:, -1].float()
            if temperature > 0:
                probs = torch.softmax(logits / temperature, dim=-1)
                tok = torch.multinomial(probs, 1, generator=gen)[:, 0]
            else:
                tok = logits.argmax(-1)
            if want_margins:
                top2 = logits.topk(2, dim=-1).values
                margins.append((top2[:, 0] - top2[:, 1]).cpu())
            out_tokens.append(tok)
            if i + 1 < n_new:
                out = model(input_ids=tok[:, None], use_cache=True, **{kw: past})
                past = _cache_of(out)
    toks = torch.stack(out_tokens, dim=1)
    return toks, (torch.stack(margins, dim=1) if want_margins else None)


def q8_0_roundtrip(w):
    """What saker's (and llama.cpp's) Q8_0 codec stores, read back: blocks of 32 along the last dimension,
    scale d = amax / 127 kept as fp16, codes round-half-away(x / d) computed with the fp32 scale."""
    x = w.detach().float().reshape(-1, 32)
    amax = x.abs().amax(dim=1, keepdim=True)
    d = amax / 127.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    v = x * inv
    q = (torch.sign(v) * torch.floor(v.abs() + 0.5)).clamp(-127, 127)
    return (q * d.half().float()).reshape(w.shape)


def q8_0_model(model):
    """A float32 CPU copy of `model` whose matrices went through Q8_0 (norm vectors stay exact), as saker loads
    the Q8_0 GGUF that `saker convert --type q8_0` writes."""
    m = Qwen3ForCausalLM(model.config)
    m.config._attn_implementation = "sdpa"
    sd = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    for k, v in sd.items():
        if v.ndim == 2 and v.shape[-1] % 32 == 0:
            sd[k] = q8_0_roundtrip(v)
    m.load_state_dict(sd)
    return m.float().eval()
