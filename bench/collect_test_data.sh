#!/usr/bin/env bash
# Packs what the GPU test binaries read from the source tree (saker-mini with its drafter, tests/data: golden
# models and llama.cpp references) into ARCHIVE (.tar.xz, about 29 MB), for a GPU machine that runs binaries
# collected by bench/collect_gpu_bins.sh without the whole checkout. There, unpack it into a folder and point
# SAKER_TEST_SOURCE_DIR at that folder:
#   bench/collect_test_data.sh ARCHIVE           (from the repository root)
#   mkdir -p /tmp/src && tar xJf ARCHIVE -C /tmp/src && SAKER_TEST_SOURCE_DIR=/tmp/src BIN/saker_gpu_model_tests
set -eu
ARCHIVE=$1
cd "$(dirname "$0")/.."
tar cf - models/saker-mini tests/data | xz -6 -T1 > "$ARCHIVE"
du -h "$ARCHIVE"
