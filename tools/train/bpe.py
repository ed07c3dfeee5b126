"""Byte-level BPE tokenizer trained with Hugging Face `tokenizers`.

The pre-tokenizer is the Qwen2 one (a Split regex, then ByteLevel without its own regex), so saker maps it to
its "qwen2" preset when it writes a GGUF. Special tokens come first: <|endoftext|> (id 0, end of every file)
and <|mask|> (id 1, the DFlash drafter's mask token).
"""
import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

EOS = "<|endoftext|>"
MASK = "<|mask|>"
SPECIALS = [EOS, MASK]
# Qwen2's pre-tokenizer regex, as spelled in its tokenizer.json.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")


def train_tokenizer(texts, vocab_size, sample_bytes, log=print):
    """Trains on the first `sample_bytes` of `texts` (already in seed-keyed random file order)."""
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    sample, n = [], 0
    for t in texts:
        if n >= sample_bytes:
            break
        sample.append(t)
        n += len(t)
    tok.train_from_iterator(sample, trainer=trainer, length=len(sample))
    assert tok.token_to_id(EOS) == 0 and tok.token_to_id(MASK) == 1, "special tokens must be ids 0 and 1"
    log(f"tokenizer: {tok.get_vocab_size()} tokens, trained on {len(sample)} files / {n / 1e6:.1f} MB")
    return tok


def save_tokenizer(tok, folder, model_max_length):
    os.makedirs(folder, exist_ok=True)
    tok.save(os.path.join(folder, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS,
        "pad_token": EOS,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": model_max_length,
    }
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def encode_documents(tok, texts, batch=2048):
    """Token ids of each text followed by <|endoftext|>, as one flat list of int lists."""
    eos = tok.token_to_id(EOS)
    out = []
    encode = getattr(tok, "encode_batch_fast", None) or tok.encode_batch  # _fast skips offsets (tokenizers 0.21+)
    for i in range(0, len(texts), batch):
        for enc in encode(texts[i:i + batch], add_special_tokens=False):
            out.append(enc.ids + [eos])
    return out
