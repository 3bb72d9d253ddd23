"""Packaging: the Inspect entry point, registry names, and the scorers/inspect_ai boundary."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conftest import REPO


def test_entry_point_is_registered():
    points = {p.name: p.value for p in entry_points(group="inspect_ai")}
    assert points.get("gem_tasks") == "gem_tasks._registry"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["elsewhere", "repository root"])
def test_registry_names_are_namespaced(tmp_path, where):
    # where a user runs inspect, and where the evidence runs start (python -m benchmarks... from
    # the root: a gem_tasks.egg-info left there by `pip install -e .` would hide the installed
    # distribution from Inspect's namespacing; scripts/test.sh removes it)
    if where == "repository root" and (REPO / "gem_tasks.egg-info").exists():
        pytest.fail(
            "gem_tasks.egg-info in the repository root makes Inspect name tasks without their "
            "package when run from there: remove it (scripts/test.sh does after installing)"
        )
    code = (
        "from inspect_ai._util.registry import registry_info\n"
        "import gem_tasks._registry as r\n"
        "names = [registry_info(getattr(r, n)).name\n"
        "         for n in ('iclr', 'gem', 'gem_raw', 'gem_s', 'gem_s_assw', 'stored_answer')]\n"
        "print(','.join(names))\n"
    )
    cwd = tmp_path if where == "elsewhere" else REPO
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip().split(",") == [
        "gem_tasks/iclr",
        "gem_tasks/gem",
        "gem_tasks/gem_raw",
        "gem_tasks/gem_s",
        "gem_tasks/gem_s_assw",
        "gem_tasks/stored_answer",
    ]


@pytest.mark.slow
def test_scorers_package_never_imports_inspect_ai():
    for path in (REPO / "scorers").rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "inspect_ai" for n in names), f"{path}: {names}"
    code = (
        "import sys, pkgutil, importlib, scorers\n"
        "for m in pkgutil.walk_packages(scorers.__path__, 'scorers.'):\n"
        "    importlib.import_module(m.name)\n"
        "assert 'inspect_ai' not in sys.modules, 'inspect_ai imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_the_command_line_starts_without_the_heavy_libraries():
    """``gem-tasks --help`` (and every subcommand's parser) imports neither Inspect nor pandas,
    SciPy, torch or transformers: each command imports what it runs when it runs (measured on a
    2-core CPU: 0.4 s to the help text, 6.6 s when the parser imported the leaderboard)."""
    heavy = ("inspect_ai", "pandas", "scipy", "torch", "transformers", "vllm")
    code = (
        "import contextlib, io, sys\n"
        "from gem_tasks.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "[]"


def test_prompts_ship_with_the_package():
    import prompts

    assert {
        "gem/predict_system",
        "gem/predict_user",
        "gem/preprocess_system",
        "gem/preprocess_user",
        "review/system",
        "review/user",
        "gem/assw_system",
        "gem/assw_user",
    } <= set(prompts.available())


@pytest.mark.slow
def test_every_task_folder_has_readme_and_eval_card_with_the_tasks_version():
    from gem_tasks.tasks import eval_card
    from gem_tasks.tasks.autopre_exam import autopre_exam
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.space import space
    from gem_tasks.tasks.summeval import summeval

    folders = sorted(
        p.parent for p in (REPO / "gem_tasks" / "tasks").glob("*/*.py") if p.stem != "__init__"
    )
    assert [f.name for f in folders] == [
        "autopre_exam",
        "correlation",
        "iclr",
        "judgments",
        "review_quality",
        "robustness",
        "space",
        "summeval",
    ]
    built = {
        "autopre_exam": autopre_exam,
        "correlation": correlation,
        "iclr": iclr,
        "review_quality": review_quality,
        "robustness": robustness,
        "summeval": summeval,
        "space": space,
        "judgments": judgments,
    }
    for folder in folders:
        assert (folder / "README.md").exists(), folder
        card = eval_card(folder)
        paper = card["paper"]
        assert card["title"] and paper["title"] and (paper.get("arxiv") or paper.get("note"))
        assert card["task"] == f"gem_tasks/{folder.name}"
        factory = built[folder.name]
        data = {"summeval": "summeval_demo", "space": "space_demo", "judgments": "summeval_demo"}
        name = data.get(folder.name, "demo_iclr")
        kwargs = {"dataset": str(REPO / f"gem_tasks/tasks/data/{name}.jsonl")}
        if folder.name == "correlation":
            continue  # needs graded reviews; its version is read the same way
        assert factory(**kwargs).version == card["version"]


def test_the_lm_eval_configs_are_package_data():
    """Every lm-evaluation-harness config matches a package-data pattern (else a wheel would
    ship the task module without the YAML that lm_eval looks for)."""
    import fnmatch
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["gem_tasks"]
    configs = sorted((REPO / "gem_tasks/lm_eval_tasks/configs").glob("*.yaml"))
    assert configs
    for path in configs:
        relative = path.relative_to(REPO / "gem_tasks").as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


def test_every_public_error_class_derives_from_the_root_error():
    """One root error: a caller catches everything the project raises on purpose with
    ``GemTasksError``. Every public exception class defined in ``scorers`` or ``gem_tasks``
    (private control-flow classes, named with a leading underscore, aside) derives from it."""
    import importlib
    import inspect
    import pkgutil

    import gem_data
    import gem_finetune
    import gem_tasks
    import scorers
    from scorers.errors import GemTasksError

    offenders = []
    for package in (scorers, gem_tasks, gem_data, gem_finetune):
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            loaded = importlib.import_module(module.name)
            for name, value in vars(loaded).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == loaded.__name__
                    and not name.startswith("_")
                    and not issubclass(value, GemTasksError)
                ):
                    offenders.append(f"{loaded.__name__}.{name}")
    assert not offenders, offenders


PACKAGES = ("scorers", "gem_tasks", "gem_data", "gem_finetune", "prompts")
"""The project's packages (``pyproject.toml`` ships them)."""


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in the file: at the top, inside a
    function, or for type checking), for every package of :data:`PACKAGES`. ``from
    package import submodule`` points at the submodule; a package's ``__init__`` is the package
    itself."""
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                found = resolve(target)
                if found and found != name:
                    graph[name].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    """The modules of the project import one another without a loop (lazy and type-checking
    imports count too: a loop hidden inside a function is still a loop in the design)."""
    graph = _import_graph()
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert graph["gem_tasks.cli"] and graph["scorers.metrics.gem"]  # the graph is not empty
    assert _cycles(graph) == []


def _third_party_imports(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_scoring_core_imports_no_data_acquisition_or_training():
    """``scorers`` (the metrics and what they share) imports neither the data acquisition
    (``gem_data``: the OpenReview builder and client, the fetcher) nor the fine-tuning code
    (``gem_finetune``), nor the libraries only they use; those two import the core, never the
    Inspect layer."""
    graph = _import_graph()
    assert any(t.startswith("scorers") for t in graph["gem_data.openreview.output"])  # not empty
    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if module.startswith("scorers") and target.startswith(("gem_data", "gem_finetune"))
    )
    assert reaching == []
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if module.startswith(("gem_data", "gem_finetune")) and target.startswith("gem_tasks")
    )
    assert upward == []
    acquisition_only = {"openreview", "pypdfium2", "gem_data", "gem_finetune"}
    offenders = {
        str(path.relative_to(REPO)): sorted(_third_party_imports(path) & acquisition_only)
        for path in (REPO / "scorers").rglob("*.py")
        if _third_party_imports(path) & acquisition_only
    }
    assert offenders == {}
    assert "openreview" in _third_party_imports(REPO / "gem_data" / "openreview" / "client.py")


def test_families_do_not_reach_into_each_other():
    """A metric family (one folder of ``scorers/metrics/``) imports the core, never another
    family: what two families share lives in the core (``scorers.pmi``, ``scorers.oracle``,
    ``scorers.text``); a family uses another's metric only through the registry. The core does
    not import a family either (the registry discovers them)."""
    graph = _import_graph()

    def family(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if parts[:2] == ["scorers", "metrics"] and len(parts) > 2 else None

    crossing = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if family(target) and family(target) != family(module) and module.startswith("scorers")
    )
    assert crossing == []


def test_an_item_is_left_unscored_one_way():
    """A metric leaves an item unscored by raising ``Unscored`` (``Metric.ascore`` turns it into
    the unscored result); no code of the core builds an unscored ``Result`` itself, except that
    one conversion."""
    found = []
    for path in (REPO / "scorers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Result":
                value = next((k.value for k in node.keywords if k.arg == "value"), None)
                if isinstance(value, ast.Constant) and value.value is None:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert len(found) == 1 and found[0].startswith("scorers/registry.py:"), found
    from scorers.types import Result

    assert not hasattr(Result, "no_usable_reference")  # the reason is per_reference's


def test_no_test_folder_shadows_a_package():
    """``tests/`` is on the path while the suite runs (its conftest is imported from there), so a
    folder ``tests/<package>`` would be found as that package (a namespace package of test files)
    before the real one, in a test run alone."""
    assert [name for name in PACKAGES if (REPO / "tests" / name).is_dir()] == []


def test_the_tests_mirror_the_metric_families():
    """One test folder per metric family, named as the family's folder, and no folder of tests
    under ``tests/metrics`` that is not a family's."""
    families = {path.parent.name for path in (REPO / "scorers" / "metrics").glob("*/__init__.py")}
    folders = {path.parent.name for path in (REPO / "tests" / "metrics").glob("*/test_*.py")}
    assert len(families) >= 11
    assert folders == families


def test_the_longest_test_files_scheduled_first_exist():
    """``conftest.LONGEST_FILES`` names test files that exist (a renamed one would silently
    lose its place at the front of the suite)."""
    from conftest import LONGEST_FILES, REPO

    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)
    assert [name for name in LONGEST_FILES if not (REPO / name).is_file()] == []
