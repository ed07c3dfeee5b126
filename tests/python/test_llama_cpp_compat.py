"""GGUFs written by `saker convert` keep the rules llama.cpp's loader enforces, so llama.cpp loads them.

The rules, as read in llama.cpp's sources (github.com/ggml-org/llama.cpp); each is checked on every file below.

ggml/src/gguf.cpp (file format)
  * magic "GGUF"; version 2 or 3 (0, 1 and anything above 3 are refused); no empty or duplicate key.
  * `general.alignment`, when present, must be UINT32 and a power of two; the default is 32.
  * tensor names shorter than 64 bytes (GGML_MAX_NAME) and unique; at most 4 dims; a ggml type id below
    GGML_TYPE_COUNT; ne[0] a multiple of the type's block size.
  * the data section starts at the end of the tensor table padded to the alignment, and tensor i's offset
    must equal the sum of the sizes, each padded to the alignment, of tensors 0..i-1 (in table order).

src/llama-model-loader.cpp (typed metadata, tensor set)
  * get_key accepts only the exact GGUF type of its target: a UINT32 for uint32_t hparams and token ids (an
    INT32 or UINT64 there throws "key ... has wrong type"), FLOAT32 for floats, BOOL, STRING.
  * get_key_or_arr (feed_forward_length, head_count, head_count_kv) accepts that scalar or an array of
    n_layer entries; get_arr accepts INT32/UINT32, FLOAT32, UINT64 or STRING arrays.
  * every tensor's data lies inside the file ("data is not within the file bounds").
  * done_getting_tensors: every tensor of the file must be claimed by the architecture's loader; an extra
    tensor fails with "wrong number of tensors". Shapes are compared exactly, in ggml ne order.

src/llama-model.cpp (load_hparams) and src/models/qwen3.cpp (LLM_ARCH_QWEN3), names from src/llama-arch.cpp
  * required: general.architecture (STRING, "qwen3"), qwen3.context_length, .embedding_length,
    .block_count (UINT32), qwen3.attention.layer_norm_rms_epsilon (FLOAT32).
  * optional with defaults: .feed_forward_length and .attention.head_count (0; but the tensors need them),
    .attention.head_count_kv (= head_count), .attention.key_length / .value_length (= n_embd / n_head),
    .rope.dimension_count (= key_length), .rope.freq_base (FLOAT32, 10000), .vocab_size (UINT32).
  * the Qwen3 graph asserts value_length == key_length == n_rot.
  * tensors, ne order: token_embd [n_embd, n_vocab]; output_norm [n_embd]; output [n_embd, n_vocab], optional
    (absent: tied to token_embd); per layer blk.i.: attn_norm [n_embd], attn_q [n_embd, key_length*n_head],
    attn_k and attn_v [n_embd, value_length*n_head_kv] (or one fused attn_qkv), attn_output
    [key_length*n_head, n_embd], attn_q_norm and attn_k_norm [key_length], ffn_norm [n_embd], ffn_gate and
    ffn_up [n_embd, n_ff], ffn_down [n_ff, n_embd]. n_vocab is the vocabulary's token count.
  * Qwen3 takes the HF weights unpermuted (convert_hf_to_gguf.py permutes Q/K for "llama" only).
  * (convention, not a check of the loader) vectors stay F32, as llama.cpp's converter and quantizer keep them.

src/llama-vocab.cpp (vocabulary)
  * tokenizer.ggml.model (STRING) is required: "none"/"no_vocab" makes a vocabulary of `<arch>.vocab_size`
    dummy tokens (0 without that key, so token_embd would not match); "gpt2" needs tokenizer.ggml.merges
    (STRING array, each "left right" split at the first space after index 0); "llama" is SentencePiece.
  * tokenizer.ggml.pre (STRING): for BPE an absent one falls back to "default" with a warning; a name not in
    llama.cpp's list throws "unknown pre-tokenizer type".
  * tokenizer.ggml.tokens: STRING array, required unless "none"; a duplicate text throws; an empty one is
    renamed "[EMPTY_i]" with a warning. Its length is n_vocab, so it must equal token_embd's rows.
  * tokenizer.ggml.token_type: INT32 array, tokenizer.ggml.scores: FLOAT32 or INT32 array, both at least as
    long as the token list (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte).
  * special token ids are read as UINT32; an id past the vocabulary is ignored with a warning.
  * a BPE token of type normal is decoded through the GPT-2 byte-to-unicode table, so it must be spelled in
    that alphabet (anything else decodes as "[UNK_BYTE_...]").
"""
import json
import pathlib
import shutil
import struct

import numpy as np
import pytest

from conftest import ROOT

gguf = pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
from safetensors.numpy import load_file  # noqa: E402

GOLDEN = ROOT / "tests" / "data" / "golden"
TYPES = ["f16", "q8_0", "q4_k_m"]

GGUF_DEFAULT_ALIGNMENT = 32
GGML_MAX_NAME = 64
GGML_MAX_DIMS = 4

T = gguf.GGUFValueType
# Every key saker writes, or llama.cpp reads for qwen3, with the one GGUF type llama.cpp's getter accepts.
KEY_TYPES = {
    "general.architecture": T.STRING,
    "general.name": T.STRING,
    "general.alignment": T.UINT32,
    "general.file_type": T.UINT32,
    "general.quantization_version": T.UINT32,
    "qwen3.vocab_size": T.UINT32,
    "qwen3.context_length": T.UINT32,
    "qwen3.embedding_length": T.UINT32,
    "qwen3.block_count": T.UINT32,
    "qwen3.feed_forward_length": T.UINT32,
    "qwen3.attention.head_count": T.UINT32,
    "qwen3.attention.head_count_kv": T.UINT32,
    "qwen3.attention.key_length": T.UINT32,
    "qwen3.attention.value_length": T.UINT32,
    "qwen3.attention.layer_norm_rms_epsilon": T.FLOAT32,
    "qwen3.rope.dimension_count": T.UINT32,
    "qwen3.rope.freq_base": T.FLOAT32,
    "qwen3.rope.scaling.type": T.STRING,
    "qwen3.rope.scaling.factor": T.FLOAT32,
    "qwen3.rope.scaling.original_context_length": T.UINT32,
    "qwen3.pooling_type": T.UINT32,
    "tokenizer.ggml.model": T.STRING,
    "tokenizer.ggml.pre": T.STRING,
    "tokenizer.ggml.token_type_count": T.UINT32,
    "tokenizer.ggml.add_bos_token": T.BOOL,
    "tokenizer.ggml.add_eos_token": T.BOOL,
    "tokenizer.ggml.add_sep_token": T.BOOL,
    "tokenizer.ggml.add_space_prefix": T.BOOL,
    "tokenizer.ggml.remove_extra_whitespaces": T.BOOL,
    "tokenizer.chat_template": T.STRING,
    **{f"tokenizer.ggml.{k}_token_id": T.UINT32
       for k in ["bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask",
                 "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"]},
}
PER_LAYER_KEYS = {"qwen3.feed_forward_length", "qwen3.attention.head_count", "qwen3.attention.head_count_kv"}
REQUIRED_KEYS = ["general.architecture", "qwen3.context_length", "qwen3.embedding_length", "qwen3.block_count",
                 "qwen3.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model",
                 # optional to llama.cpp's getters, but the Qwen3 tensors are sized by them
                 "qwen3.feed_forward_length", "qwen3.attention.head_count"]

# tokenizer.ggml.pre names llama.cpp's BPE loader accepts (llama-vocab.cpp); any other throws.
LLAMA_CPP_PRE_NAMES = {
    "default", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
    "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es",
    "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "jina-v1-en", "jina-v2-code",
    "roberta-bpe", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "olmo", "dbrx",
    "smaug-bpe", "poro-chat", "chatglm-bpe", "glm4", "viking", "jais", "tekken", "smollm", "codeshell", "bloom",
    "gpt3-finnish", "exaone", "exaone4", "chameleon", "minerva-7b", "gpt-4o", "llama4", "superbpe", "trillion",
    "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense", "kimi-k2", "grok-2",
}
TOKEN_TYPES = {1, 2, 3, 4, 5, 6}  # normal, unknown, control, user-defined, unused, byte
NORMAL = 1

Q = gguf.GGMLQuantizationType
# Types llama.cpp's CPU backend multiplies and gathers rows of; saker's --type choices map into these.
MATRIX_TYPES = {Q.F32, Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K,
                Q.Q6_K, Q.IQ4_NL, Q.IQ4_XS}

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

HF_NAMES = {
    "token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head",
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}


def gpt2_byte_alphabet() -> set[str]:
    """The 256 characters GPT-2's bytes_to_unicode maps bytes to."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            chars.add(chr(256 + extra))
            extra += 1
    return chars


# --- the HF folders converted ----------------------------------------------------------------------------


def train_tokenizer(vocab_size: int):
    """A byte-level BPE as Qwen2/Qwen3 ship it: Split(Qwen2 regex) then ByteLevel without its own regex."""
    import random

    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    rng = random.Random(0)
    syllables = ["ka", "to", "ri", "sa", "ne", "mu", "lo", "pe", "ti", "ra", "an", "er", "in", "on", "st", "th",
                 "qu", "ex", "I'm", "we've", "42", "7", ", ", ".\n", "  "]
    corpus = [" ".join("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(12))
              for _ in range(600)]
    tok.train_from_iterator(corpus, trainer=trainer)
    assert tok.get_vocab_size() == vocab_size
    return tok


def folder_with_tokenizer(dest: pathlib.Path, golden: str, vocab_size: int) -> pathlib.Path:
    dest.mkdir(parents=True)
    for f in (GOLDEN / golden).iterdir():
        if f.name != "reference.safetensors":
            shutil.copy(f, dest / f.name)
    train_tokenizer(vocab_size).save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "add_bos_token": False,
        "chat_template": CHAT_TEMPLATE}))
    return dest


# (case id, golden weights, tokenizer vocabulary size or None, --type)
CASES = [(f"{g}-{t}", g, None, t) for g in ["qwen3-tied", "qwen3-untied"] for t in TYPES] + [
    ("tokenizer-untied-q8_0", "qwen3-untied", 512, "q8_0"),
    ("tokenizer-tied-q4_k_m", "qwen3-tied", 512, "q4_k_m"),
    # fewer tokens than embedding rows (as Qwen3's 151669 tokens for 151936 rows): the list is padded
    ("short-tokenizer-untied-f16", "qwen3-untied", 400, "f16"),
]


@pytest.fixture(scope="module")
def converted(saker, tmp_path_factory):
    cache = {}

    def get(case_id: str):
        if case_id not in cache:
            _, golden, n_tok, qtype = next(c for c in CASES if c[0] == case_id)
            root = tmp_path_factory.mktemp(case_id)
            src = GOLDEN / golden if n_tok is None else folder_with_tokenizer(root / "hf", golden, n_tok)
            out = root / "model.gguf"
            saker("convert", src, "-o", out, "--type", qtype)
            cache[case_id] = (src, out)
        return cache[case_id]

    return get


# --- the rules -------------------------------------------------------------------------------------------


def field_type(field) -> tuple:
    """(type) for a scalar, (ARRAY, element type) for an array."""
    return tuple(field.types)


def scalar(reader, key):
    return reader.fields[key].contents()


def check_file_format(path: pathlib.Path, reader) -> int:
    raw = path.read_bytes()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", raw, 0)
    assert magic == b"GGUF"
    assert version in (2, 3), f"llama.cpp reads GGUF v2 and v3 only, got v{version}"
    # The reader refuses duplicate keys; all n_kv keys must have come through.
    keys = [k for k in reader.fields if not k.startswith("GGUF.")]
    assert len(keys) == n_kv and all(keys)
    assert len(reader.tensors) == n_tensors > 0

    alignment = GGUF_DEFAULT_ALIGNMENT
    if "general.alignment" in reader.fields:
        assert field_type(reader.fields["general.alignment"]) == (T.UINT32,)
        alignment = int(scalar(reader, "general.alignment"))
        assert alignment > 0 and alignment & (alignment - 1) == 0
    assert reader.alignment == alignment
    assert reader.data_offset % alignment == 0

    names = [t.name for t in reader.tensors]
    assert len(set(names)) == len(names), "duplicate tensor names"
    expected_offset = 0
    for t in reader.tensors:
        assert len(t.name.encode()) < GGML_MAX_NAME, t.name
        assert 1 <= len(t.shape) <= GGML_MAX_DIMS, t.name
        block, type_size = gguf.GGML_QUANT_SIZES[t.tensor_type]
        ne0 = int(t.shape[0])
        assert ne0 % block == 0, f"{t.name}: ne[0]={ne0} is not a multiple of {t.tensor_type.name}'s block {block}"
        n_bytes = int(np.prod([int(d) for d in t.shape])) // block * type_size
        assert t.n_bytes == n_bytes
        offset = t.data_offset - reader.data_offset
        assert offset == expected_offset, f"{t.name}: offset {offset}, gguf.cpp requires {expected_offset}"
        expected_offset += (n_bytes + alignment - 1) // alignment * alignment
        assert t.data_offset + n_bytes <= len(raw), f"{t.name}: data is not within the file bounds"
    return alignment


def check_key_types(reader):
    for key, field in reader.fields.items():
        if key not in KEY_TYPES:
            continue  # llama.cpp never reads it
        want = KEY_TYPES[key]
        got = field_type(field)
        if key in PER_LAYER_KEYS and got[0] == T.ARRAY:
            assert got[1] in (T.UINT32, T.INT32), f"{key}: array of {got[1].name}"
            assert len(field.data) == scalar(reader, "qwen3.block_count")
        else:
            assert got == (want,), f"{key}: llama.cpp reads it as {want.name}, the file has {[g.name for g in got]}"
    for key in REQUIRED_KEYS:
        assert key in reader.fields, f"{key} is required"
    assert scalar(reader, "general.architecture") == "qwen3"
    if "qwen3.rope.scaling.type" in reader.fields:
        assert scalar(reader, "qwen3.rope.scaling.type") in {"none", "linear", "yarn", "longrope"}


def hparams(reader) -> dict:
    def get(key, default):
        if key not in reader.fields:
            return default
        value = reader.fields[key].contents()
        if isinstance(value, list):  # per-layer array: every layer alike in the models here
            assert len(set(value)) == 1
            value = value[0]
        return value

    n_embd = get("qwen3.embedding_length", None)
    n_head = get("qwen3.attention.head_count", 0)
    head_k = get("qwen3.attention.key_length", n_embd // n_head)
    return {
        "n_embd": n_embd, "n_layer": get("qwen3.block_count", None), "n_ff": get("qwen3.feed_forward_length", 0),
        "n_head": n_head, "n_head_kv": get("qwen3.attention.head_count_kv", n_head), "head_k": head_k,
        "head_v": get("qwen3.attention.value_length", n_embd // n_head),
        "n_rot": get("qwen3.rope.dimension_count", head_k),
    }


def check_vocab(reader) -> int:
    """The rules of llama-vocab.cpp; returns n_vocab as llama.cpp computes it."""
    model = scalar(reader, "tokenizer.ggml.model")
    assert model in {"none", "no_vocab", "gpt2", "llama"}, f"tokenizer.ggml.model {model!r}"
    if model in {"none", "no_vocab"}:
        # No token list: the vocabulary is <arch>.vocab_size dummy tokens, and without that key it is empty.
        assert "qwen3.vocab_size" in reader.fields, "tokenizer 'none' needs qwen3.vocab_size for n_vocab"
        return int(scalar(reader, "qwen3.vocab_size"))

    tokens_field = reader.fields["tokenizer.ggml.tokens"]
    assert field_type(tokens_field) == (T.ARRAY, T.STRING)
    tokens = tokens_field.contents()
    n = len(tokens)
    assert len(set(tokens)) == n, "llama.cpp throws on a duplicate token text"
    assert all(tokens), "llama.cpp renames empty tokens with a warning"

    types = None
    if "tokenizer.ggml.token_type" in reader.fields:
        f = reader.fields["tokenizer.ggml.token_type"]
        assert field_type(f) == (T.ARRAY, T.INT32), f"token_type: llama.cpp wants an INT32 array, got {f.types}"
        types = f.contents()
        assert len(types) >= n and set(types) <= TOKEN_TYPES
    if "tokenizer.ggml.scores" in reader.fields:
        f = reader.fields["tokenizer.ggml.scores"]
        assert field_type(f) in {(T.ARRAY, T.FLOAT32), (T.ARRAY, T.INT32)}
        assert len(f.data) >= n

    if model == "gpt2":
        pre = reader.fields.get("tokenizer.ggml.pre")
        assert pre is not None, "without tokenizer.ggml.pre llama.cpp falls back to 'default' pre-tokenization"
        pre_name = scalar(reader, "tokenizer.ggml.pre")
        assert pre_name in LLAMA_CPP_PRE_NAMES, f"llama.cpp throws on the unknown pre-tokenizer {pre_name!r}"
        merges_field = reader.fields["tokenizer.ggml.merges"]
        assert field_type(merges_field) == (T.ARRAY, T.STRING)
        merges = merges_field.contents()
        assert merges and all(m.find(" ", 1) > 0 for m in merges), "a merge is 'left right'"
        alphabet = gpt2_byte_alphabet()
        if types is not None:
            bad = [t for t, ty in zip(tokens, types) if ty == NORMAL and not set(t) <= alphabet]
            assert not bad, f"normal BPE tokens outside the byte-level alphabet: {bad[:5]}"

    for key in KEY_TYPES:
        if key.endswith("_token_id") and key in reader.fields:
            assert scalar(reader, key) < n, f"{key} is past the vocabulary"
    if "tokenizer.ggml.add_bos_token" in reader.fields and scalar(reader, "tokenizer.ggml.add_bos_token"):
        assert "tokenizer.ggml.bos_token_id" in reader.fields
    return n


def check_tensors(reader, n_vocab: int, hp: dict):
    assert hp["head_v"] == hp["head_k"] == hp["n_rot"], "the Qwen3 graph asserts these equal"
    assert hp["n_head"] % hp["n_head_kv"] == 0
    e, ff, hk, hv = hp["n_embd"], hp["n_ff"], hp["head_k"], hp["head_v"]
    q, kv = hk * hp["n_head"], hv * hp["n_head_kv"]
    want = {"token_embd.weight": [e, n_vocab], "output_norm.weight": [e]}
    for i in range(hp["n_layer"]):
        want.update({f"blk.{i}.{k}.weight": s for k, s in {
            "attn_norm": [e], "attn_q": [e, q], "attn_k": [e, kv], "attn_v": [e, kv], "attn_output": [q, e],
            "attn_q_norm": [hk], "attn_k_norm": [hk], "ffn_norm": [e], "ffn_gate": [e, ff], "ffn_up": [e, ff],
            "ffn_down": [ff, e]}.items()})
    got = {t.name: t for t in reader.tensors}
    if "output.weight" in got:  # optional: absent means tied to token_embd
        want["output.weight"] = [e, n_vocab]
    for i in range(hp["n_layer"]):  # a fused attn_qkv replaces attn_q/k/v
        if f"blk.{i}.attn_qkv.weight" in got:
            for k in ["attn_q", "attn_k", "attn_v"]:
                del want[f"blk.{i}.{k}.weight"]
            want[f"blk.{i}.attn_qkv.weight"] = [e, q + 2 * kv]
    assert set(got) == set(want), (f"missing {sorted(set(want) - set(got))}, "
                                   f"unclaimed by the qwen3 loader {sorted(set(got) - set(want))}")
    for name, shape in want.items():
        t = got[name]
        assert [int(d) for d in t.shape] == shape, f"{name}: ne {list(map(int, t.shape))}, llama.cpp wants {shape}"
        if len(shape) == 1:
            assert t.tensor_type == Q.F32, f"{name}: norms stay F32"
        else:
            assert t.tensor_type in MATRIX_TYPES, f"{name}: {t.tensor_type.name}"


def check_weights_unpermuted(reader, src: pathlib.Path):
    """F16/F32 tensors hold the HF weights as they are (Q/K not permuted), row-major [ne1][ne0]."""
    hf = load_file(str(src / "model.safetensors"))
    checked = 0
    for t in reader.tensors:
        if t.tensor_type not in (Q.F32, Q.F16):
            continue
        parts = t.name.split(".")
        if parts[0] == "blk":
            hf_name = f"model.layers.{parts[1]}.{HF_NAMES[parts[2]]}.weight"
        else:
            hf_name = f"{HF_NAMES[parts[0]]}.weight"
        ref = hf[hf_name]
        data = np.asarray(t.data).reshape(ref.shape)
        want = ref.astype(np.float16) if t.tensor_type == Q.F16 else ref
        np.testing.assert_array_equal(data, want, err_msg=t.name)
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_convert_output_follows_llama_cpp_loader_rules(converted, case_id):
    src, out = converted(case_id)
    reader = gguf.GGUFReader(str(out))
    check_file_format(out, reader)
    check_key_types(reader)
    n_vocab = check_vocab(reader)
    hp = hparams(reader)
    check_tensors(reader, n_vocab, hp)
    check_weights_unpermuted(reader, src)

    config = json.loads((src / "config.json").read_text())
    assert n_vocab == config["vocab_size"]
    assert ("output.weight" in {t.name for t in reader.tensors}) == (not config["tie_word_embeddings"])
    assert hp["head_k"] == config["head_dim"]
    assert scalar(reader, "qwen3.rope.freq_base") == pytest.approx(config["rope_parameters"]["rope_theta"])


@pytest.mark.parametrize("case_id", ["tokenizer-untied-q8_0", "short-tokenizer-untied-f16"])
def test_tokenizer_exported_as_llama_cpp_reads_it(converted, case_id):
    src, out = converted(case_id)
    reader = gguf.GGUFReader(str(out))
    spec = json.loads((src / "tokenizer.json").read_text())
    n_real = len(spec["model"]["vocab"])

    assert scalar(reader, "tokenizer.ggml.model") == "gpt2"
    # The Split regex Qwen2/Qwen3 ship (written "(?i:'s|...)") is llama.cpp's "qwen2" pre-tokenizer.
    assert scalar(reader, "tokenizer.ggml.pre") == "qwen2"
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    for piece, idx in spec["model"]["vocab"].items():
        assert tokens[idx] == piece
    for a in spec["added_tokens"]:
        assert tokens[a["id"]] == a["content"] and types[a["id"]] == (3 if a["special"] else 4)
    # Embedding rows past the tokenizer's last id get unique unused tokens, as convert_hf_to_gguf.py writes.
    assert tokens[n_real:] == [f"[PAD{i}]" for i in range(n_real, len(tokens))]
    assert set(types[n_real:]) <= {5}
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    assert reader.fields["tokenizer.ggml.merges"].contents() == merges
    assert scalar(reader, "tokenizer.ggml.eos_token_id") == SPECIALS.index("<|im_end|>")
    assert scalar(reader, "tokenizer.ggml.padding_token_id") == SPECIALS.index("<|endoftext|>")
    assert "tokenizer.ggml.bos_token_id" not in reader.fields
    assert scalar(reader, "tokenizer.ggml.add_bos_token") is False
    assert scalar(reader, "tokenizer.chat_template") == CHAT_TEMPLATE


def test_tokenizer_larger_than_embedding_is_refused(saker, tmp_path):
    """llama.cpp sizes token_embd by the token list, so more tokens than rows could never load."""
    src = folder_with_tokenizer(tmp_path / "hf", "qwen3-tied", 600)
    proc = saker("convert", src, "-o", tmp_path / "m.gguf", "--type", "f16", check=False)
    assert proc.returncode != 0
    assert "600 tokens" in proc.stderr.decode() and "512" in proc.stderr.decode()
    assert not (tmp_path / "m.gguf").exists()
