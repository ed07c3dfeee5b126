"""DFlash block-diffusion drafter: model, training on the target's own generations, and a PyTorch measurement
of the mean accepted length per verify step (temperature 0).

Format and algorithm follow saker's speculative-decoding notes (section 2): a stack of Qwen3-style decoder
layers of the target's hidden size, no embedding and no head of its own (the target's embed_tokens embeds the
block, the target's lm_head reads the drafter's final-normed state); tapped target layers fused by
fc + hidden_norm into per-token context features; block = [pending token, MASK x (B-1)].

Usable as a script to re-measure a saved drafter:
  python3 tools/train/dflash.py --target OUT/hf --drafter OUT/drafter --prompts OUT/heldout_prompts.json
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


def rope(x, pos, theta):
    """NeoX (rotate-half) RoPE. x [..., T, d], pos [..., T] (broadcastable batch dims)."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.float()[..., None] * inv
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class DraftLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, hd = c["hidden_size"], c["head_dim"]
        self.nq, self.nkv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], hd
        self.theta = c["rope_theta"]
        eps = c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(H, eps)
        self.post_attention_layernorm = RMSNorm(H, eps)
        self.self_attn = nn.Module()
        a = self.self_attn
        a.q_proj = nn.Linear(H, self.nq * hd, bias=False)
        a.k_proj = nn.Linear(H, self.nkv * hd, bias=False)
        a.v_proj = nn.Linear(H, self.nkv * hd, bias=False)
        a.o_proj = nn.Linear(self.nq * hd, H, bias=False)
        a.q_norm = RMSNorm(hd, eps)
        a.k_norm = RMSNorm(hd, eps)
        self.mlp = nn.Module()
        m = self.mlp
        m.gate_proj = nn.Linear(H, c["intermediate_size"], bias=False)
        m.up_proj = nn.Linear(H, c["intermediate_size"], bias=False)
        m.down_proj = nn.Linear(c["intermediate_size"], H, bias=False)

    def forward(self, h, ctx, pos_blk, pos_ctx, mask):
        """h [S, Q, H] block rows; ctx [S, L, H] fused context features; mask [S, 1, Q, L + Q] (True = attend)
        or None (every row sees everything)."""
        a = self.self_attn
        S, Q, _ = h.shape
        L = ctx.shape[1]
        hn = self.input_layernorm(h)
        q = a.q_norm(a.q_proj(hn).view(S, Q, self.nq, self.hd)).transpose(1, 2)
        kv_in = torch.cat([ctx, hn], dim=1)  # the context is not passed through the input norm
        k = a.k_norm(a.k_proj(kv_in).view(S, L + Q, self.nkv, self.hd)).transpose(1, 2)
        v = a.v_proj(kv_in).view(S, L + Q, self.nkv, self.hd).transpose(1, 2)
        q = rope(q, pos_blk[:, None, :], self.theta)
        k = rope(k, torch.cat([pos_ctx, pos_blk], dim=1)[:, None, :], self.theta)
        rep = self.nq // self.nkv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        q, k = q.to(v.dtype), k.to(v.dtype)  # the norms' float32 weights promote q and k under autocast
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 / math.sqrt(self.hd))
        h = h + a.o_proj(o.transpose(1, 2).reshape(S, Q, self.nq * self.hd))
        m = self.mlp
        hn = self.post_attention_layernorm(h)
        return h + m.down_proj(F.silu(m.gate_proj(hn)) * m.up_proj(hn))


class DFlashDrafter(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H = c["hidden_size"]
        taps = c["dflash_config"]["target_layer_ids"]
        self.fc = nn.Linear(len(taps) * H, H, bias=False)
        self.hidden_norm = RMSNorm(H, c["rms_norm_eps"])
        self.layers = nn.ModuleList([DraftLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(H, c["rms_norm_eps"])
        for mod in self.modules():
            if isinstance(mod, nn.Linear):
                nn.init.normal_(mod.weight, std=c.get("initializer_range", 0.02))

    @property
    def block_size(self):
        return self.c["block_size"]

    @property
    def taps(self):
        return self.c["dflash_config"]["target_layer_ids"]

    @property
    def mask_id(self):
        return self.c["dflash_config"]["mask_token_id"]

    def fuse(self, hidden_states):
        """hidden_states: the target's HF hidden_states tuple; tap i = output of decoder layer i = hs[i + 1]."""
        x = torch.cat([hidden_states[i + 1] for i in self.taps], dim=-1)
        return self.hidden_norm(self.fc(x))

    def forward(self, block_emb, ctx, pos_blk, pos_ctx, mask):
        h = block_emb
        for layer in self.layers:
            h = layer(h, ctx, pos_blk, pos_ctx, mask)
        return self.norm(h)


def make_config(target_cfg, n_layers, block_size, mask_id, taps):
    t = target_cfg
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "block_size": block_size,
        "num_target_layers": t.num_hidden_layers,
        "dflash_config": {"mask_token_id": mask_id, "target_layer_ids": list(taps)},
        "hidden_size": t.hidden_size,
        "intermediate_size": t.intermediate_size,
        "num_hidden_layers": n_layers,
        "num_attention_heads": t.num_attention_heads,
        "num_key_value_heads": t.num_key_value_heads,
        "head_dim": t.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": t.rms_norm_eps,
        "rope_theta": _rope_theta(t),
        "max_position_embeddings": t.max_position_embeddings,
        "vocab_size": t.vocab_size,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "tie_word_embeddings": False,
        "initializer_range": 0.02,
        "layer_types": ["full_attention"] * n_layers,
        "use_sliding_window": False,
        "sliding_window": None,
        "eos_token_id": t.eos_token_id,
        "dtype": "bfloat16",
    }


def _rope_theta(cfg):
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:
        rp = getattr(cfg, "rope_parameters", None) or {}
        theta = rp.get("rope_theta", 10000.0)
    return float(theta)


def default_taps(n_target_layers, n_taps):
    """DFlash's default rule: one tap -> [N // 2]; else round(1 + i * (N - 4) / (n - 1)), i = 0..n-1.

    It never taps the last layer, whose HF hidden_states entry is taken after the final norm (not the raw
    layer output that "output of layer i" means)."""
    if n_taps == 1:
        return [n_target_layers // 2]
    taps = [int(math.floor(1 + i * (n_target_layers - 4) / (n_taps - 1) + 0.5)) for i in range(n_taps)]
    if len(set(taps)) < n_taps:  # too few target layers for the rule: spread over 0..N-2 instead
        taps = sorted({int(math.floor(i * (n_target_layers - 2) / (n_taps - 1) + 0.5)) for i in range(n_taps)})
    return taps


def spread_taps(n_target_layers, n_taps):
    """Evenly from layer 1 to layer N-2 (the deepest raw layer output HF exposes; see default_taps): deeper
    than the default rule, which helps a drafter of a shallow target. The recipe writes the ids into
    config.json, so readers need no rule."""
    if n_taps == 1:
        return [n_target_layers // 2]
    return sorted({int(math.floor(1 + i * (n_target_layers - 3) / (n_taps - 1) + 0.5)) for i in range(n_taps)})


def choose_taps(tap_ids, n_target_layers, n_taps):
    """The tapped target layers: `tap_ids` ("1,4,6": sorted, duplicates dropped) or spread_taps; refused when
    outside 0..N-2 (the last layer's HF hidden state is taken after the final norm)."""
    taps = sorted({int(x) for x in tap_ids.split(",")}) if tap_ids else spread_taps(n_target_layers, n_taps)
    if max(taps) > n_target_layers - 2 or min(taps) < 0:
        raise SystemExit(f"tapped layers {taps}: must lie in 0..{n_target_layers - 2} (the last layer's HF hidden "
                         "state is taken after the final norm)")
    return taps


def save(drafter, folder):
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(drafter.c, f, indent=2)
        f.write("\n")
    sd = {k: v.detach().to(torch.bfloat16).cpu().contiguous() for k, v in drafter.state_dict().items()}
    save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})


def load(folder, device):
    from safetensors.torch import load_file
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    d = DFlashDrafter(c)
    d.load_state_dict({k: v.float() for k, v in load_file(os.path.join(folder, "model.safetensors")).items()})
    return d.to(device).eval()


# ---------------------------------------------------------------------------------------------------------
# Training data: the target's own continuations of training-split prompts.

@torch.no_grad()
def generate_data(target, stream, *, prompt_len, new_tokens, batch, temperatures, budget_s, seed, amp_dtype,
                  max_seqs=None, log=print):
    """Continuations of random training-stream windows, alternating the given temperatures batch by batch,
    until `budget_s` seconds (or max_seqs). Returns LongTensor [N, prompt_len + new_tokens] on the device."""
    from lm import generate
    dev = stream.device
    g = torch.Generator().manual_seed(seed)
    gdev = torch.Generator(device=dev).manual_seed(seed + 1)
    seqs, t0, i = [], time.time(), 0
    while time.time() - t0 < budget_s and (max_seqs is None or sum(s.shape[0] for s in seqs) < max_seqs):
        starts = torch.randint(0, stream.numel() - prompt_len, (batch,), generator=g)
        prompts = stream[(starts[:, None] + torch.arange(prompt_len)[None, :]).to(dev)].long()
        temp = temperatures[i % len(temperatures)]
        toks, _ = generate(target, prompts, new_tokens, temperature=temp, gen=gdev, amp_dtype=amp_dtype)
        seqs.append(torch.cat([prompts, toks], dim=1))
        i += 1
    out = torch.cat(seqs)
    log(f"drafter data: {out.shape[0]} sequences x {out.shape[1]} tokens ({out.shape[0] * new_tokens} generated) "
        f"in {time.time() - t0:.0f}s, temperatures {temperatures}")
    return out


def block_inputs(tokens, anchors, B, mask_id):
    """tokens [S, L]; anchors [S, A] -> block token ids [S, A*B], positions [S, A*B], labels [S, A*B] (-100
    where there is no label: offset 0 and past the sequence end), anchor of each row [S, A*B]."""
    S, L = tokens.shape
    A = anchors.shape[1]
    off = torch.arange(B, device=tokens.device)
    pos = anchors[:, :, None] + off  # [S, A, B]
    blk = torch.full_like(pos, mask_id)
    blk[:, :, 0] = tokens.gather(1, anchors)
    lab = tokens.gather(1, pos.clamp(max=L - 1).reshape(S, A * B)).view(S, A, B)
    lab = torch.where((pos <= L - 1) & (off > 0), lab, torch.full_like(lab, -100))
    anc = anchors[:, :, None].expand(S, A, B)
    return blk.reshape(S, A * B), pos.reshape(S, A * B), lab.reshape(S, A * B), anc.reshape(S, A * B)


def block_mask(anc, L, B):
    """Row r (anchor a, block j) sees context positions < a and the rows of its own block."""
    S, Q = anc.shape
    dev = anc.device
    ctx_ok = torch.arange(L, device=dev)[None, None, :] < anc[:, :, None]  # [S, Q, L]
    blk_id = torch.arange(Q, device=dev) // B
    blk_ok = (blk_id[:, None] == blk_id[None, :])[None].expand(S, Q, Q)
    return torch.cat([ctx_ok, blk_ok], dim=2)[:, None]


def drafter_logits(drafter, target, blk_tokens, ctx, pos_blk, mask):
    emb = target.get_input_embeddings()(blk_tokens)
    pos_ctx = torch.arange(ctx.shape[1], device=ctx.device)[None].expand(ctx.shape[0], -1)
    h = drafter(emb, ctx, pos_blk, pos_ctx, mask)
    return target.get_output_embeddings()(h)


def _weighted_ce(head, h, labels, weights):
    """sum(weights * cross_entropy(head(h), labels)), the logits in float32."""
    return (F.cross_entropy(head(h).float(), labels, reduction="none") * weights).sum()


def head_loss(head, h, labels, weights, chunk_rows=None):
    """The weighted mean cross entropy of the target's head over rows h [N, H], a chunk of rows at a time with
    each chunk's logits recomputed in the backward pass: a full-vocabulary head over every labelled row of a
    batch would hold N x V logits (16 sequences x 128 anchors x 15 rows x 152K vocabulary: 19 GB in float32,
    twice that with their gradient), more than an 80 GB GPU has left beside the drafter."""
    from torch.utils.checkpoint import checkpoint
    if chunk_rows is None:
        chunk_rows = max(256, (1 << 28) // head.weight.shape[0])  # about 1 GB of float32 logits a chunk
    total = None
    for s in range(0, h.shape[0], chunk_rows):
        e = s + chunk_rows
        part = checkpoint(_weighted_ce, head, h[s:e], labels[s:e], weights[s:e], use_reentrant=False)
        total = part if total is None else total + part
    return total / weights.sum()


def train(drafter, target, data, *, prompt_len, batch, anchors, budget_s, peak_lr, gamma, seed, amp_dtype,
          max_steps=None, calib_steps=5, log_every=50, log=print):
    """Trains the drafter on the generated sequences (target frozen; its embedding and head reused)."""
    from lm import lr_at
    dev = data.device
    B = drafter.block_size
    N, L = data.shape
    for p in target.parameters():
        p.requires_grad_(False)
    target.eval()
    opt = torch.optim.AdamW(drafter.parameters(), lr=peak_lr, betas=(0.9, 0.95), weight_decay=0.01,
                            fused=dev.type == "cuda")
    w = torch.exp(-(torch.arange(B, device=dev).float() - 1) / gamma)  # weight of block offset k >= 1
    g = torch.Generator().manual_seed(seed)
    lo, hi = prompt_len, L - 2  # anchor a: a generated token with a label at a + 1
    A = min(anchors, hi - lo + 1)
    total = max_steps

    def one_step(batch):
        """One optimizer step on `batch` sequences; returns the loss."""
        idx = torch.randint(0, N, (batch,), generator=g)
        tok = data[idx.to(dev)]
        anc = (torch.rand(batch, hi - lo + 1, generator=g).argsort(dim=1)[:, :A] + lo).sort(dim=1).values.to(dev)
        with torch.no_grad(), torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            hs = target.model(input_ids=tok, output_hidden_states=True, use_cache=False).hidden_states
            taps = [hs[i + 1] for i in drafter.taps]
        blk, pos, lab, anc_rows = block_inputs(tok, anc, B, drafter.mask_id)
        mask = block_mask(anc_rows, L, B)
        keep = lab != -100  # offset 0 (the given token) and rows past the sequence end have no label
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            ctx = drafter.hidden_norm(drafter.fc(torch.cat(taps, dim=-1)))
            pos_ctx = torch.arange(L, device=dev)[None].expand(batch, -1)
            h = drafter(target.get_input_embeddings()(blk), ctx, pos, pos_ctx, mask)  # [S, A*B, H]
            wk = w.repeat(A)[None].expand(batch, -1)[keep]
            # the head only where it counts: the labelled rows
            loss = head_loss(target.get_output_embeddings(), h[keep], lab[keep], wk)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), 1.0)
        opt.step()
        return loss

    step, t0, curve, recent = 0, time.time(), [], []
    drafter.train()
    while total is None or step < total:
        if total is None:
            lr = peak_lr * 0.1  # the timing (calibration) steps run at a low rate
        else:
            lr = lr_at(step, total, peak_lr, max(1, int(0.04 * total)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        try:
            loss = one_step(batch)
            oom = False
        except torch.OutOfMemoryError:
            if step > 0 or batch == 1:
                raise
            oom = True  # handled below, once the failed step's tensors are released with its traceback
        if oom:
            opt.zero_grad(set_to_none=True)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            log(f"drafter: {batch} sequences a step do not fit in device memory; trying {batch // 2}")
            batch //= 2
            continue
        step += 1
        recent.append(loss.item() if step % 10 == 0 or step <= calib_steps else None)
        if max_steps is None and step in (calib_steps, 6 * calib_steps):
            # timed twice, as the target's loop: warm-up first, then the steady-state rate
            if dev.type == "cuda":
                torch.cuda.synchronize()
            now = time.time()
            if step == calib_steps:
                per, t_calib = (now - t0) / step, now
            else:
                per = (now - t_calib) / (step - calib_steps)
            total = max(step + 1, step + int((budget_s - (now - t0)) / per))
            log(f"drafter: {per * 1000:.0f} ms/step after {step} steps -> {total} steps in {budget_s:.0f} s")
        if step % log_every == 0:
            l = loss.item()
            el = time.time() - t0
            curve.append(dict(step=step, seconds=round(el, 1), loss=round(l, 4)))
            log(f"drafter: step {step}/{total} loss {l:.4f} lr {lr:.2e} {el:.0f}s")
            if max_steps is None and el > 1.1 * budget_s:
                log("drafter: time budget exceeded, stopping early")
                break
    tail = [x for x in recent if x is not None][-10:]
    return dict(steps=step, seconds=round(time.time() - t0, 1), batch=batch, anchors_per_seq=A, peak_lr=peak_lr,
                gamma=gamma, final_loss=round(sum(tail) / max(1, len(tail)), 4), sequences=N, seq_len=L,
                curve=curve)


def train_new(dcfg, target, data, *, seed, prompt_len, new_tokens, temperatures, batch, anchors, budget_s, peak_lr,
              gamma, amp_dtype, max_steps, log_every, folder, log=print):
    """A new drafter of config dcfg (seeded), trained on `data`, saved to `folder` in bf16 and read back as the
    float32 model that will be measured: what was saved. Returns (drafter, training stats)."""
    dev = data.device
    torch.manual_seed(seed + 23)
    drafter = DFlashDrafter(dcfg).to(dev)
    n_params = sum(p.numel() for p in drafter.parameters())
    log(f"drafter: {dcfg['num_hidden_layers']} layers, taps {dcfg['dflash_config']['target_layer_ids']}, block "
        f"{dcfg['block_size']}, {n_params / 1e6:.2f}M parameters")
    stats = train(drafter, target, data, prompt_len=prompt_len, batch=batch, anchors=anchors, budget_s=budget_s,
                  peak_lr=peak_lr, gamma=gamma, seed=seed + 31, amp_dtype=amp_dtype, max_steps=max_steps,
                  log_every=log_every, log=log)
    stats.update(params=n_params, generated_tokens=int(data.shape[0] * new_tokens), temperatures=temperatures)
    save(drafter, folder)
    return load(folder, dev), stats


# ---------------------------------------------------------------------------------------------------------
# Measurement: block draft + greedy verify, as a speculative decoder runs it.

@torch.no_grad()
def spec_decode_greedy(target, drafter, prompt, n_new):
    """Greedy speculative decoding of one prompt (LongTensor [P]). Each verify step runs the target over the
    whole committed sequence plus the block (no KV cache: same logits a cached verify would give, up to
    rounding). Returns (tokens, list of tokens committed per verify step)."""
    dev = prompt.device
    B = drafter.block_size
    seq = prompt.clone()
    out = target.model(input_ids=seq[None], output_hidden_states=True, use_cache=False)
    feats = drafter.fuse(out.hidden_states)[0]  # [s, H] for committed positions
    pending = target.lm_head(out.last_hidden_state[0, -1]).argmax()
    generated, per_step = [], []
    while len(generated) < n_new:
        s = seq.numel()
        blk = torch.full((1, B), drafter.mask_id, device=dev, dtype=torch.long)
        blk[0, 0] = pending
        pos = torch.arange(s, s + B, device=dev)[None]
        # one block: it sees every committed position and all of itself, so no mask is needed
        logits = drafter_logits(drafter, target, blk, feats[None], pos, None)[0]
        draft = logits[1:].argmax(-1)  # row i predicts the token at s + i
        cand = torch.cat([pending[None], draft])
        out = target.model(input_ids=torch.cat([seq, cand])[None], output_hidden_states=True,
                           use_cache=False)
        tgt = target.lm_head(out.last_hidden_state[0, s:]).argmax(-1)  # tgt[i]: the target's token at s + i + 1
        n_acc = 0
        while n_acc < B - 1 and draft[n_acc] == tgt[n_acc]:
            n_acc += 1
        commit = cand[: n_acc + 1]
        seq = torch.cat([seq, commit])
        step_feats = drafter.fuse(out.hidden_states)[0, s: s + n_acc + 1]
        feats = torch.cat([feats, step_feats])
        pending = tgt[n_acc]
        generated.extend(commit.tolist())
        per_step.append(n_acc + 1)
    return generated[:n_new], per_step


@torch.no_grad()
def measure_acceptance(target, drafter, prompts, n_new, budget_s=None, log=print):
    """Mean tokens committed per verify step (accepted drafts + the target's own token) at temperature 0 over
    the prompts, and whether speculative output equals plain greedy output (it must: greedy is lossless)."""
    from lm import generate
    target.eval()
    drafter.eval()
    steps, mismatches, t0, done = [], 0, time.time(), 0
    for p in prompts:
        if budget_s is not None and time.time() - t0 > budget_s and done >= 4:
            break
        toks, per = spec_decode_greedy(target, drafter, p, n_new)
        plain, _ = generate(target, p[None], n_new)
        if toks != plain[0].tolist():
            mismatches += 1
        steps.extend(per)
        done += 1
    hist = [0] * drafter.block_size
    for n in steps:
        hist[n - 1] += 1
    mean = sum(steps) / len(steps)
    res = dict(mean_accepted_length=round(mean, 3), mean_accepted_drafts=round(mean - 1, 3), verify_steps=len(steps),
               prompts=done, new_tokens_per_prompt=n_new, block_size=drafter.block_size, temperature=0.0,
               histogram_tokens_per_step=hist, greedy_mismatch_prompts=mismatches,
               seconds=round(time.time() - t0, 1))
    log(f"acceptance: {mean:.3f} tokens per verify step over {len(steps)} steps on {done} held-out prompts "
        f"(block {drafter.block_size}, temperature 0); speculative != plain greedy on {mismatches} prompts")
    return res


def main():
    ap = argparse.ArgumentParser(description="Measure a saved DFlash drafter's mean accepted length (temperature 0)")
    ap.add_argument("--target", required=True, help="HF folder of the target (config.json + model.safetensors)")
    ap.add_argument("--drafter", required=True, help="drafter folder (config.json + model.safetensors)")
    ap.add_argument("--prompts", required=True, help="JSON list of {'ids': [...]} (the recipe's heldout_prompts.json)")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    from transformers import Qwen3ForCausalLM
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    target = Qwen3ForCausalLM.from_pretrained(a.target, dtype=torch.float32).to(dev).eval()
    drafter = load(a.drafter, dev)
    with open(a.prompts) as f:
        prompts = [torch.tensor(p["ids"], device=dev) for p in json.load(f)]
    print(json.dumps(measure_acceptance(target, drafter, prompts, a.new_tokens), indent=2))


if __name__ == "__main__":
    main()
