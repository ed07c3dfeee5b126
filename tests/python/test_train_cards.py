"""What tools/train writes into a drafter's card and metrics.json names the file and the installation layout,
not the paths of the machine that trained it (the card travels with the drafter). Needs no torch."""
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "train"))
import corpus  # noqa: E402
import drafter_for  # noqa: E402


def test_corpus_roots_are_recorded_by_their_place_in_the_installation(monkeypatch, tmp_path):
    venv, base = tmp_path / "venv", tmp_path / "base"
    monkeypatch.setattr(corpus.sys, "prefix", str(venv))
    monkeypatch.setattr(corpus.sys, "base_prefix", str(base))
    real = lambda p: os.path.realpath(str(p))  # noqa: E731
    assert corpus.describe_root(real(venv / "lib" / "python3.12" / "site-packages")) == \
        "{prefix}/lib/python3.12/site-packages"
    assert corpus.describe_root(real(base / "lib" / "python3.12")) == "{base_prefix}/lib/python3.12"
    assert corpus.describe_root(real(tmp_path / "venvx" / "lib")) == real(tmp_path / "venvx" / "lib")


def test_drafter_for_records_its_command_without_this_machines_paths():
    argv = ["--target", "/models/x/SmolLM2.Q4_1.gguf", "--out=/tmp/run/dflash", "--minutes", "5"]
    assert drafter_for.reader_command(argv, ("/models/x/SmolLM2.Q4_1.gguf", "/tmp/run/dflash")) == \
        "python3 tools/train/drafter_for.py --target SmolLM2.Q4_1.gguf --out=dflash --minutes 5"
