#!/usr/bin/env bash
# Builds the test environment from the committed lock (requirements/test.lock: every package with
# its hashes, torch's CPU build and vLLM's CPU build included) and runs the suite in it, then the
# model backends' tests under the newest transformers pyproject.toml admits. Extra arguments go
# to pytest. "No tests collected" is a failure.
#
#   bash scripts/test.sh           everything, in the locked environment (what CI runs)
#   bash scripts/test.sh --fast    no install step, and only the tests not marked slow (none of
#                                  them loads a model or runs an eval end to end): a maintainer's
#                                  minute-long loop once a full run has built the environment
#   bash scripts/test.sh --newest  everything, in a second environment resolved afresh to the
#                                  newest versions every bound admits (printing which differ from
#                                  the lock): the measured step before `bash scripts/lock.sh`
#
# The environment is the test command's own: .test-env/ in the checkout (GEM_TASKS_TEST_ENV moves
# it), synced to the lock on every full run, so that `pip list` in it is the lock plus this
# checkout's package and nothing else. It needs CPython 3.11 (what the lock is resolved for).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

fast=0
newest=0
args=()
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    --newest) newest=1 ;;
    *) args+=("$arg") ;;
  esac
done
if [ "$fast" = "1" ] && [ "$newest" = "1" ]; then
  echo "test.sh: --fast runs the environment already built; --newest builds another: pick one" >&2
  exit 2
fi

env="${GEM_TASKS_TEST_ENV:-.test-env}"
case "$env" in /*) ;; *) env="$root/$env" ;; esac
lock="$root/requirements/test.lock"
if [ "$newest" = "1" ]; then
  env="$env-newest"
  lock="$env/resolved.lock"  # written once the environment exists
fi

if [ "$fast" = "1" ]; then
  # no install step: the environment must already hold this checkout's package (a full run does)
  if ! (cd /tmp && "$env/bin/python" -c "import gem_tasks, pathlib, sys; sys.exit(pathlib.Path(gem_tasks.__file__).resolve().parents[1] != pathlib.Path(sys.argv[1]).resolve())" "$root") 2>/dev/null; then
    echo "--fast: $env does not hold this checkout's package; run 'bash scripts/test.sh' once (it builds the environment), then --fast" >&2
    exit 1
  fi
  args=(-m "not slow" ${args[@]+"${args[@]}"})
else
  base=""
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null \
      && "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != (3, 11))" 2>/dev/null; then
      base="$candidate"
      break
    fi
  done
  if [ -z "$base" ]; then
    echo "test.sh: the test environment needs CPython 3.11 (the lock is resolved for it); none is on PATH" >&2
    exit 1
  fi
  if [ ! -x "$env/bin/python" ]; then
    "$base" -m venv "$env"
  fi
  # uv installs the rest; it comes from the lock itself, through pip's hash checking
  if [ "$("$env/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$("$base" scripts/lockfile.py entry requirements/test.lock uv | sed -n 's/^uv==\([^ ]*\).*/\1/p')" ]; then
    "$env/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
      -r <("$base" scripts/lockfile.py entry requirements/test.lock uv)
  fi
  if [ "$newest" = "1" ]; then
    GEM_TASKS_TEST_ENV="$env" bash scripts/lock.sh "$lock"
    echo "newest versions every bound admits, against requirements/test.lock (lock -> newest):"
    "$base" scripts/lockfile.py diff requirements/test.lock "$lock" | sed 's/^/  /'
  fi
  # torch's CPU build is not on PyPI: uv also looks where pip is configured to find wheels
  links=()
  while read -r location; do
    [ -n "$location" ] && links+=(--find-links "$location")
  done < <("$base" -m pip config list 2>/dev/null \
    | sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p" | tr ' ' '\n' | sort -u)
  if ! "$env/bin/uv" pip sync --quiet --python "$env/bin/python" --require-hashes \
    ${links[@]+"${links[@]}"} "$lock"; then
    echo "test.sh: installing $lock failed (above); torch's CPU build comes from pip's find-links or UV_FIND_LINKS/UV_EXTRA_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu)" >&2
    exit 1
  fi
  "$env/bin/uv" pip install --quiet --python "$env/bin/python" --no-deps -e .
  # the editable install leaves gem_tasks.egg-info here; from the repository root (python -m
  # benchmarks...) it hides the installed metadata from Inspect, which then registers tasks
  # without their package (iclr, not gem_tasks/iclr) and will not resume a log written elsewhere
  rm -rf gem_tasks.egg-info
  "$env/bin/python" scripts/lockfile.py check "$lock"
fi
export VIRTUAL_ENV="$env"
export PATH="$env/bin:$PATH"
hash -r

if [ "$fast" = "0" ]; then
  # the embedded model's transformers folder, de-quantised from its GGUF once per machine while
  # chromium installs (every test session's cache links its models folder here)
  HF_HUB_OFFLINE=1 python -c "from scorers.lm.embedded import materialize_embedded; materialize_embedded()" &
  materialising=$!
  export GEM_TASKS_REQUIRE_VLLM=1
  # a headless browser for the HTML leaderboard's test: Debian's chromium (playwright drives it)
  if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq chromium >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
      || echo "could not install chromium: the HTML leaderboard's browser test will fail" >&2
  fi
  export GEM_TASKS_REQUIRE_CHROMIUM=1
  wait "$materialising" || { echo "materialising the embedded model failed (above)" >&2; exit 1; }
fi
set -- ${args[@]+"${args[@]}"}

set +e
# two workers, whole files each, in the collection order (tests/conftest.py puts the longest
# files first; xdist would otherwise start the files with the most tests first and leave the
# few long ones to the end); GEM_TASKS_TEST_WORKERS=0 runs it in one process
workers="${GEM_TASKS_TEST_WORKERS:-2}"
if [ "$workers" = "0" ]; then
  pytest "$@"
else
  pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
if [ "$status" -eq 0 ] && [ "$fast" = "0" ]; then
  # the newest transformers pyproject.toml admits, which vLLM's CPU build (it caps transformers
  # lower) keeps out of the environment above: the model backends' tests again in a virtual
  # environment layered over it (a .pth file adds the test environment's site-packages after
  # its own, as a site directory, so that the editable install's own .pth is read too), every
  # deprecation our own calls trigger an error
  spec=$(python -c "import re, tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print(next(d for d in deps if re.match(r'transformers\b', d)))")
  layer="$env-transformers"
  rm -rf "$layer"
  python -m venv "$layer"
  purelib="import sysconfig; print(sysconfig.get_paths()['purelib'])"
  python -c "import sysconfig; print(f\"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\")" \
    >"$("$layer/bin/python" -c "$purelib")/gem-tasks-test-env.pth"
  "$layer/bin/python" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
    --upgrade "$spec"
  echo "newest transformers admitted ($spec): $("$layer/bin/python" -c 'import transformers; print(transformers.__version__)')"
  "$layer/bin/python" -m pytest -q -p no:cacheprovider tests/lm --ignore=tests/lm/test_vllm.py \
    --ignore=tests/lm/test_vllm_environment.py -W "error::FutureWarning:scorers" \
    -W "error::DeprecationWarning:scorers" || status=$?
fi
exit "$status"
