#!/usr/bin/env bash
# Copies the binaries bench/gpu_suite.sh runs, plus the non-system shared libraries they link, into DEST
# (for running a build from this machine on a GPU machine of the same architecture), stripped.
#   bench/collect_gpu_bins.sh BUILD_DIR DEST [ARCHIVE]
# With ARCHIVE, DEST is also packed into ARCHIVE (a .tar.xz whose 256 MiB dictionary spans several binaries:
# each carries the same ~45 MB of GPU code, which is then stored once; saker, both GPU test binaries, the
# playgrounds and lib/ pack to about 16 MB against 50 MB packed one by one). Unpack with `tar xJf ARCHIVE`.
# The test binaries also read models/ and tests/data: bench/collect_test_data.sh packs those.
set -eu
BUILD=$1; DEST=$2; ARCHIVE=${3:-}
mkdir -p "$DEST/lib"
for b in saker saker_ops_cuda_tests saker_gpu_model_tests saker_golden_tests matmul_cuda_bench attention_cuda_bench; do
  [ -x "$BUILD/bin/$b" ] && cp "$BUILD/bin/$b" "$DEST/" && strip "$DEST/$b"
done
for b in "$DEST"/saker*; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)[.-]' \
    | grep -v '/cuda' | while read -r lib; do cp -Lu "$lib" "$DEST/lib/"; done
done
du -sh "$DEST"
if [ -n "$ARCHIVE" ]; then
  tar cf - -C "$(dirname "$DEST")" "$(basename "$DEST")" | xz -6 --lzma2=preset=6,dict=256MiB -T1 > "$ARCHIVE"
  du -h "$ARCHIVE"
fi
