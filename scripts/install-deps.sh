#!/usr/bin/env bash
# Installs what saker needs to build and test, from Debian packages only, skipping what is present.
# Usage: scripts/install-deps.sh            (build + test dependencies)
#        scripts/install-deps.sh --python   (also the Python venv used by tests/python, in .venv)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git curl
  nlohmann-json3-dev libboost-dev libcli11-dev libfmt-dev libspdlog-dev
  libpcre2-dev libxxhash-dev libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev  # libFuzzer + sanitizers for the fuzz build
  python3 python3-venv python3-pip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "saker: installing missing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "saker: all Debian packages present"
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "saker: CUDA toolkit found: the CUDA backend will be built"
else
  echo "saker: no CUDA toolkit (nvcc) found: building the CPU backend only"
fi

if [ "${1:-}" = "--python" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "saker: creating .venv for the Python tests"
    /usr/bin/python3 -m venv .venv 2>/dev/null || python3 -m venv .venv
  fi
  if ! .venv/bin/python -c "import pytest, numpy, gguf, tokenizers" 2>/dev/null; then
    echo "saker: installing Python test packages into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
  fi
fi
