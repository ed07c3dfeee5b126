#!/usr/bin/env bash
# Copies the binaries bench/gpu_suite.sh runs, plus the non-system shared libraries they link, into DEST
# (for running a build from this machine on a GPU machine of the same architecture).
#   bench/collect_gpu_bins.sh BUILD_DIR DEST
set -eu
BUILD=$1; DEST=$2
mkdir -p "$DEST/lib"
for b in saker saker_ops_cuda_tests saker_gpu_model_tests saker_golden_tests matmul_cuda_bench attention_cuda_bench; do
  [ -x "$BUILD/bin/$b" ] && cp "$BUILD/bin/$b" "$DEST/"
done
for b in "$DEST"/saker*; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)[.-]' \
    | grep -v '/cuda' | while read -r lib; do cp -Lu "$lib" "$DEST/lib/"; done
done
du -sh "$DEST"
