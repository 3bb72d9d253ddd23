#!/usr/bin/env bash
# Resolves everything the test command installs (the package's `test` extra from pyproject.toml,
# requirements/test.in, and requirements/test-no-deps.in without dependencies) to the newest
# versions the bounds admit, with every file's hash, for CPython 3.11 on Linux x86_64.
#
#   bash scripts/lock.sh          refresh requirements/test.lock: the one way a new version
#                                 enters the test environment (run the test command on it, then
#                                 commit the lock with what it changed)
#   bash scripts/lock.sh OUT      write the resolution to OUT instead (test.sh --newest)
#
# Resolved by uv (the test environment's own, or one on PATH). torch's CPU build is not on PyPI:
# the resolver also looks where pip is configured to find wheels (find-links, as pip config list
# shows it), or wherever UV_FIND_LINKS / UV_EXTRA_INDEX_URL point, e.g.
# UV_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-requirements/test.lock}"

uv="${GEM_TASKS_TEST_ENV:-.test-env}/bin/uv"
if [ ! -x "$uv" ]; then
  uv=$(command -v uv || true)
fi
if [ -z "$uv" ]; then
  echo "lock.sh: no uv: run 'bash scripts/test.sh' once (its environment has uv) or pip install uv" >&2
  exit 1
fi

links=()
while read -r location; do
  [ -n "$location" ] && links+=(--find-links "$location")
done < <(python -m pip config list 2>/dev/null \
  | sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p" | tr ' ' '\n' | sort -u)

target=(--python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes)
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.no-deps"' EXIT
# torchvision, torchaudio and torchcodec are vLLM's dependencies that its CPU build runs without
# and whose PyPI builds do not load against torch's CPU build: they stay out of the environment
UV_CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" "$uv" pip compile --quiet --upgrade \
  pyproject.toml requirements/test.in --extra test "${target[@]}" ${links[@]+"${links[@]}"} \
  --no-emit-package torchvision --no-emit-package torchaudio --no-emit-package torchcodec \
  -o "$tmp"
"$uv" pip compile --quiet --no-deps --no-header requirements/test-no-deps.in "${target[@]}" \
  -o "$tmp.no-deps"
{
  cat "$tmp"
  echo
  echo "# installed without their dependencies (requirements/test-no-deps.in)"
  grep -v '^#' "$tmp.no-deps"
} >"$out"
python scripts/lockfile.py entry "$out" uv >/dev/null
python scripts/lockfile.py entry "$out" torch >/dev/null
echo "lock.sh: $(grep -c '^[A-Za-z0-9]' "$out") packages pinned in $out"
