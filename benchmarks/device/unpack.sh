#!/usr/bin/env bash
# On your own machine, after benchmarks/device/run.sh: the results folder and its logs from the
# device call's files (the folder the run tool names in files_at) into this checkout, at the
# same path, so that the same command run on this machine resumes or finishes the run (its
# journal and logs continue).
#
#   bash benchmarks/device/unpack.sh /work/.device/N
set -euo pipefail
cd "$(dirname "$0")/../.."
from=$1
tar -xf "$from/results.tar"
cat "$from"/logs.tar.* | tar -xf -
tar -tf "$from/results.tar" | head -1
