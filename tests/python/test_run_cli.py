"""`saker run`, `saker convert` and `saker synth` driven as a user would, and the errors bad inputs get."""
import pathlib
import re

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import ROOT, shared_data

GOLDEN = ROOT / "tests" / "data" / "golden"


def ids_line(stdout: bytes) -> list[int]:
    for line in stdout.decode().splitlines():
        if line.startswith("ids:"):
            return [int(x) for x in line[4:].split()]
    raise AssertionError(f"no 'ids:' line in output:\n{stdout.decode()}")


@pytest.mark.parametrize("model", ["qwen3-tied", "qwen3-untied", "qwen2-tied"])
def test_run_greedy_on_hf_folder_matches_transformers(saker, model):
    ref = load_file(str(GOLDEN / model / "reference.safetensors"))
    prompt = " ".join(map(str, ref["greedy_prompt"].tolist()))
    proc = saker("run", "-m", GOLDEN / model, "--prompt-ids", prompt, "-n", "32", "--temp", "0", "--print-ids")
    assert ids_line(proc.stdout) == ref["greedy_tokens"].tolist()
    assert re.search(r"prompt: 8 tokens .* tok/s\) \| generation: 32 tokens", proc.stderr.decode())


def test_convert_then_run(saker, tmp_path):
    ref = load_file(str(GOLDEN / "qwen3-untied" / "reference.safetensors"))
    prompt = " ".join(map(str, ref["greedy_prompt"].tolist()))
    for t in ["f32", "f16", "q8_0"]:
        out = tmp_path / f"m-{t}.gguf"
        saker("convert", GOLDEN / "qwen3-untied", "-o", out, "--type", t)
        info = saker("info", out).stdout.decode()
        assert "architecture  qwen3" in info
        proc = saker("run", "-m", out, "--prompt-ids", prompt, "-n", "32", "--temp", "0", "--print-ids")
        got = ids_line(proc.stdout)
        assert len(got) == 32
        if t == "f32":  # the same weights: the same greedy tokens
            assert got == ref["greedy_tokens"].tolist()


def test_qwen2_convert_keeps_f32_biases_and_synth_runs(saker, tmp_path):
    ref = load_file(str(GOLDEN / "qwen2-tied" / "reference.safetensors"))
    prompt = " ".join(map(str, ref["greedy_prompt"].tolist()))
    out = tmp_path / "qwen2-f32.gguf"
    saker("convert", GOLDEN / "qwen2-tied", "-o", out, "--type", "f32")
    info = saker("info", out, "--all-tensors").stdout.decode()
    assert "architecture  qwen2" in info
    assert re.search(r"blk\.1\.attn_v\.bias\s+f32\s+\[64\]", info), info
    proc = saker("run", "-m", out, "--prompt-ids", prompt, "-n", "32", "--temp", "0", "--print-ids")
    assert ids_line(proc.stdout) == ref["greedy_tokens"].tolist()
    q = tmp_path / "qwen2-tiny-q4km.gguf"
    saker("synth", "--arch", "qwen2", "--preset", "tiny", "--type", "q4_k_m", "-o", q)
    info = saker("info", q, "--all-tensors").stdout.decode()
    assert "architecture  qwen2" in info and re.search(r"blk\.0\.attn_q\.bias\s+f32", info), info
    proc = saker("run", "-m", q, "-p", "def hello():", "-n", "16", "--seed", "7", "--print-ids", "--ignore-eos")
    assert len(ids_line(proc.stdout)) == 16


def test_synth_and_run_quantized(saker, tmp_path):
    out = tmp_path / "tiny-q4km.gguf"
    saker("synth", "--arch", "qwen3", "--preset", "tiny", "--type", "q4_k_m", "-o", out)
    info = saker("info", out).stdout.decode()
    assert re.search(r"q4_K\s+\d+ tensors", info) and re.search(r"q6_K\s+\d+ tensors", info)
    proc = saker("run", "-m", out, "-p", "def hello():", "-n", "24", "--seed", "7", "--print-ids", "--ignore-eos")
    assert len(ids_line(proc.stdout)) == 24
    # same seed, same tokens
    again = saker("run", "-m", out, "-p", "def hello():", "-n", "24", "--seed", "7", "--print-ids", "--ignore-eos")
    assert ids_line(again.stdout) == ids_line(proc.stdout)


def test_run_llama_cpp_quantized_files(saker):
    quant = shared_data("quant")
    for t in ["Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"]:
        proc = saker("run", "-m", quant / f"tiny-{t}.gguf", "--prompt-ids", "5 6 7 8", "-n", "8", "--temp", "0",
                     "--print-ids", "--ignore-eos")
        assert len(ids_line(proc.stdout)) == 8, t


# --- bad inputs: a clear message and a non-zero exit, never a crash -------------------------------------

def expect_error(saker, *args, match: str):
    proc = saker(*args, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1, f"exit {proc.returncode}, stderr:\n{err}"
    assert re.search(match, err), err
    return err


def write_gguf(path: pathlib.Path, arch: str, drop: str | None = None, bad_shape: str | None = None):
    import gguf
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(64)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_key_length(32)
    w.add_layer_norm_rms_eps(1e-6)
    shapes = {
        "token_embd.weight": (100, 64), "output_norm.weight": (64,), "blk.0.attn_norm.weight": (64,),
        "blk.0.attn_q.weight": (64, 64), "blk.0.attn_k.weight": (32, 64), "blk.0.attn_v.weight": (32, 64),
        "blk.0.attn_output.weight": (64, 64), "blk.0.attn_q_norm.weight": (32,), "blk.0.attn_k_norm.weight": (32,),
        "blk.0.ffn_norm.weight": (64,), "blk.0.ffn_gate.weight": (128, 64), "blk.0.ffn_up.weight": (128, 64),
        "blk.0.ffn_down.weight": (64, 128),
    }
    rng = np.random.default_rng(0)
    for name, shape in shapes.items():
        if name == drop:
            continue
        if name == bad_shape:
            shape = (shape[0] + 1,) + shape[1:]
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float32) * 0.02)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_missing_tensor(saker, tmp_path):
    p = tmp_path / "missing.gguf"
    write_gguf(p, "qwen3", drop="blk.0.ffn_up.weight")
    expect_error(saker, "run", "-m", p, "--prompt-ids", "1 2", match=r"missing tensor 'blk\.0\.ffn_up\.weight'")


def test_wrong_shape(saker, tmp_path):
    p = tmp_path / "shape.gguf"
    write_gguf(p, "qwen3", bad_shape="blk.0.attn_k.weight")
    expect_error(saker, "run", "-m", p, "--prompt-ids", "1 2", match=r"'blk\.0\.attn_k\.weight' has shape \[33, 64\].*expected \[32, 64\]")


def test_unsupported_architecture(saker, tmp_path):
    p = tmp_path / "arch.gguf"
    write_gguf(p, "mamba9")
    expect_error(saker, "run", "-m", p, "--prompt-ids", "1 2", match=r"architecture 'mamba9' is not supported")


def test_prompt_longer_than_context(saker):
    ids = " ".join(["5"] * 40)
    expect_error(saker, "run", "-m", GOLDEN / "qwen3-tied", "--prompt-ids", ids, "-c", "32",
                 match=r"prompt has 40 tokens but the context holds 32")


def test_token_id_outside_vocab(saker):
    expect_error(saker, "run", "-m", GOLDEN / "qwen3-tied", "--prompt-ids", "1 99999", match=r"outside the vocabulary")


def test_bad_prompt_ids(saker):
    expect_error(saker, "run", "-m", GOLDEN / "qwen3-tied", "--prompt-ids", "1 two 3", match=r"'two' is not a token id")


def test_missing_model(saker):
    expect_error(saker, "run", "-m", "/nonexistent/model", "-p", "hi", match=r"no such model file or folder")


def test_bad_sampling_parameter(saker):
    expect_error(saker, "run", "-m", GOLDEN / "qwen3-tied", "--prompt-ids", "1 2", "--top-p", "0",
                 match=r"top_p must be in \(0, 1\]")


def test_synth_unknown_preset(saker, tmp_path):
    expect_error(saker, "synth", "--preset", "700b", "-o", tmp_path / "x.gguf", match=r"unknown preset '700b'")


def test_run_tensor_parallel_gives_the_same_text(saker, tmp_path):
    m = tmp_path / "qwen3-tiny-gqa.gguf"
    saker("synth", "--arch", "qwen3", "--preset", "tiny-gqa", "--type", "q8_0", "-o", m)
    args = ["run", "-m", m, "-p", "def hello():", "-n", "24", "--temp", "0", "--ignore-eos", "--print-ids",
            "--device", "cpu"]
    one = saker(*args)
    for n in ["2", "4"]:
        split = saker(*args, "--tensor-parallel", n)
        assert split.stdout == one.stdout
        assert len(ids_line(split.stdout)) == 24
    cuda = saker(*args[:-2], "--device", "cuda", "--tensor-parallel", "2", check=False)
    assert cuda.returncode != 0 and b"NCCL" in cuda.stderr
    bad = saker(*args, "--tensor-parallel", "3", check=False)
    assert bad.returncode != 0 and b"divisible by 3" in bad.stderr
