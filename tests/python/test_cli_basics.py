"""`saker --version` and `saker info`, including the errors a user sees for bad files."""
import re

from conftest import shared_data


def test_version(saker):
    out = saker("--version").stdout.decode()
    assert re.match(r"saker \d+\.\d+\.\d+ \(cuda backend: (compiled|not compiled)\)", out), out


def test_info_on_llama_cpp_quantized_file(saker):
    quant = shared_data("quant")
    out = saker("info", quant / "tiny-Q4_K_M.gguf").stdout.decode()
    assert "architecture  qwen3" in out
    assert re.search(r"block_count\s+2", out)
    assert "blk.0.attn_q.weight" in out
    assert re.search(r"q4_K\s+\d+ tensors", out)
    assert re.search(r"output\.weight\s+q6_K\s+\[512, 256\]", out), out


def test_info_lists_tokenizer(saker):
    vocab = shared_data("vocab")
    out = saker("info", vocab / "ggml-vocab-gpt-2.gguf").stdout.decode()
    assert "model gpt2, pre-tokenizer gpt-2" in out
    assert "vocab 50257 tokens" in out


def test_info_missing_file(saker):
    proc = saker("info", "/nonexistent/model.gguf", check=False)
    assert proc.returncode != 0
    assert "not found" in proc.stderr.decode()


def test_info_truncated_file_names_the_offset(saker, tmp_path):
    quant = shared_data("quant")
    data = (quant / "tiny-f16.gguf").read_bytes()
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(data[: len(data) // 2])
    proc = saker("info", bad, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "corrupt file" in err and "byte" in err, err


def test_info_not_a_gguf(saker, tmp_path):
    bad = tmp_path / "text.gguf"
    bad.write_text("this is not a model\n")
    proc = saker("info", bad, check=False)
    assert proc.returncode == 1
    assert "bad magic" in proc.stderr.decode()


def test_unknown_subcommand_fails(saker):
    proc = saker("frobnicate", check=False)
    assert proc.returncode != 0
