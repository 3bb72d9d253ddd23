"""The documentation is tested like code: the site builds strictly (a broken link or a renamed
function fails), the generated reference pages are current, the README stays short, every task
parameter is documented, every Python snippet runs, and every shell command shown names only
tasks, parameters, options and modules that exist."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from conftest import REPO

TASKS = (
    "iclr",
    "review_quality",
    "robustness",
    "correlation",
    "autopre_exam",
    "summeval",
    "space",
    "judgments",
)


def documented_markdown() -> list[Path]:
    """The README and every page of the site (docs/ and the READMEs it takes from the tree)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    pages += sorted(REPO.glob("gem_tasks/tasks/*/README.md"))
    pages += [REPO / "benchmarks" / "README.md", REPO / "benchmarks" / "speed" / "README.md"]
    pages += sorted(REPO.glob("benchmarks/experiments/*/README.md"))
    return pages


def fenced(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)


def test_readme_is_short_and_the_docs_say_what_gem_s_means_in_two_clicks():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    # README -> the GEM page, whose definition names gem_s
    assert "](docs/metrics/gem.md)" in readme
    assert "`gem_s`" in (REPO / "docs" / "metrics" / "gem.md").read_text()


def test_the_generated_reference_pages_are_current(tmp_path: Path):
    """Regenerated in a fresh process (other tests register toy metrics in theirs), the pages
    equal the committed ones."""
    from gem_tasks.docs_reference import CLI_REFERENCE, METRIC_TABLE

    run = subprocess.run(
        [sys.executable, "-c", "from gem_tasks.cli import main; main()"]
        + ["docs-reference", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for page in (METRIC_TABLE, CLI_REFERENCE):
        fresh = (tmp_path / page).read_text()
        assert (REPO / "docs" / page).read_text() == fresh, (
            f"docs/{page} is stale: run gem-tasks docs-reference --out docs"
        )
    table = (tmp_path / METRIC_TABLE).read_text()
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from scorers import list_metrics as l; print(*[f'{s.name} {s.version}' for s in l()])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name, version in zip(listed[::2], listed[1::2], strict=True):  # each metric, its version
        assert re.search(rf"\| `{name}`[^\n]*\| {version} \|", table), name


def test_the_site_builds_strictly(tmp_path: Path):
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "WARNING" not in run.stderr, run.stderr[-4000:]
    # the pages taken from beside the code are in the site, with their links rewritten
    assert (tmp_path / "s" / "gem_tasks" / "tasks" / "iclr" / "index.html").exists()
    gaming = (tmp_path / "s" / "benchmarks" / "experiments" / "gaming" / "index.html").read_text()
    assert "results/iclr2020/report/" in gaming


def named_parameters(function) -> list[str]:
    """A task's parameters by name (not the variadic keyword through which it refuses names it
    does not have)."""
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


def test_the_cli_reference_is_what_every_help_prints():
    """Each block of docs/cli.md is what ``gem-tasks ... --help`` prints in a terminal of the
    reference's width (the command itself, run as a user runs it)."""
    from gem_tasks.docs_reference import REFERENCE_COLUMNS

    page = (REPO / "docs" / "cli.md").read_text()
    blocks = re.findall(r"^## `(gem-tasks[^`]*)`\n\n```text\n(.*?)\n```$", page, re.M | re.S)
    assert len(blocks) >= 14
    program = Path(sys.executable).parent / "gem-tasks"
    environment = {**os.environ, "COLUMNS": str(REFERENCE_COLUMNS)}
    for command, block in blocks:
        words = command.split()[1:]
        run = subprocess.run(
            [str(program), *words, "--help"], capture_output=True, text=True, env=environment
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.rstrip() == block, f"docs/cli.md's `{command}` is not its --help"


@pytest.mark.parametrize("task", TASKS)
def test_every_task_parameter_is_documented_with_its_eval_card_version(task: str):
    function = getattr(importlib.import_module(f"gem_tasks.tasks.{task}"), task)
    readme = (REPO / "gem_tasks" / "tasks" / task / "README.md").read_text()
    missing = [p for p in named_parameters(function) if f"`{p}`" not in readme]
    assert not missing, f"{task}: parameters not in its README: {missing}"
    version = yaml.safe_load((REPO / "gem_tasks" / "tasks" / task / "eval.yaml").read_text())
    assert f"[`eval.yaml`](eval.yaml), version {version['version']} " in readme


# -- shell commands ---------------------------------------------------------------------------

NOT_CHECKED = ("for ", "done", "do ", "export ", "cd ", "apt-get ", "mkdocs ")
"""Shell syntax and tools outside the project (mkdocs is checked by building the site)."""


def split_commands(block: str) -> list[str]:
    """The commands of a shell block: split at unquoted newlines, ``;`` and ``&&``, with
    backslash continuations joined and comments dropped."""
    block = re.sub(r"\\\n\s*", " ", block)
    commands, current, quote, i = [], "", None, 0
    while i < len(block):
        char = block[i]
        if quote:
            quote = None if char == quote else quote
            current += char
        elif char in "'\"":
            quote = char
            current += char
        elif char == "#" and (not current or current[-1].isspace()):
            while i < len(block) and block[i] != "\n":
                i += 1
            continue
        elif char in "\n;" or block.startswith("&&", i):
            commands.append(current.strip())
            current = ""
            i += 2 if char == "&" else 1
            continue
        else:
            current += char
        i += 1
    commands.append(current.strip())
    return [c for c in commands if c]


def shell_commands() -> list[tuple[str, str]]:
    """(page, command) for every command in a bash block and every inline `command` in prose
    that starts with one of the project's entry points."""
    found = []
    for page in documented_markdown():
        name = str(page.relative_to(REPO))
        for block in fenced(page, "bash"):
            found += [(name, command) for command in split_commands(block)]
        prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for inline in re.findall(
            r"`((?:inspect eval|gem-tasks|python -m benchmarks)[^`]*)`", prose
        ):
            found.append((name, re.sub(r"\s+", " ", inline)))
    return found


def option_names(tokens: list[str]) -> list[str]:
    return [t.split("=", 1)[0] for t in tokens if t.startswith("--")]


def task_parameters(task: str) -> set[str]:
    module = importlib.import_module(f"gem_tasks.tasks.{task}")
    return set(named_parameters(getattr(module, task)))


def check_inspect(tokens: list[str]) -> None:
    if tokens[1] in ("eval", "eval-retry") and len(tokens) == 2:
        return  # the command named in prose
    if tokens[1] == "eval":
        task = tokens[2].removeprefix("gem_tasks/")
        if task.startswith("<"):
            return  # a placeholder: "gem_tasks/<task>"
        assert task in TASKS, f"unknown task {tokens[2]}"
        allowed = task_parameters(task)
        for i, token in enumerate(tokens):
            if token == "-T":
                name = tokens[i + 1].split("=", 1)[0].strip("'\"")
                assert name in allowed, f"{task} has no parameter {name}"
    elif tokens[1] == "score":
        from scorers.registry import metric_spec

        scorer = tokens[tokens.index("--scorer") + 1].removeprefix("gem_tasks/")
        spec = metric_spec(scorer)
        allowed = set(spec.defaults) | {"scorer_lm", "scorer_lm_args", "cache_dir"}
        for i, token in enumerate(tokens):
            if token == "-S":
                name = tokens[i + 1].split("=", 1)[0].strip("'\"")
                assert name in allowed, f"scorer {scorer} has no option {name}"
    elif tokens[1] == "eval-retry":
        assert len(tokens) == 3, f"eval-retry takes the log to resume: {tokens}"
    elif tokens[1] != "view":
        raise AssertionError(f"unchecked inspect command: {tokens[1]}")


def check_gem_tasks(tokens: list[str]) -> None:
    import argparse

    from gem_tasks.cli import build_parser

    parser = build_parser()
    rest = tokens[1:]
    while True:  # walk down the subcommands
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or not rest or rest[0] not in subparsers[0].choices:
            break
        parser = subparsers[0].choices[rest.pop(0)]
    known = {s for action in parser._actions for s in action.option_strings}
    for option in option_names(rest):
        assert option in known, f"{parser.prog} has no option {option}"


def check_python_module(tokens: list[str]) -> None:
    """The script exists and its own argument parser accepts the arguments shown (a renamed or
    removed option, a missing required one, a value of the wrong type); parsing stops before
    the script does anything."""
    import argparse
    import contextlib
    import io

    module = tokens[2]
    if "<" in module or module.endswith("."):
        return  # a pattern: "python -m benchmarks.<folder>.<script>", "python -m benchmarks..."
    assert module.startswith(("benchmarks.", "docs.scripts.")), module
    path = REPO / (module.replace(".", "/") + ".py")
    assert path.exists(), f"no module {module}"
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    script = importlib.import_module(module)

    class Parsed(Exception):
        pass

    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise Parsed(parse(self, args, namespace))

    argv, errors = tokens[3:], io.StringIO()
    saved_argv = sys.argv
    argparse.ArgumentParser.parse_args = parse_then_stop
    sys.argv = [module, *argv]
    try:
        with contextlib.redirect_stderr(errors):
            script.main(argv) if inspect.signature(script.main).parameters else script.main()
    except Parsed:
        return
    except SystemExit:
        raise AssertionError(f"{module}: {errors.getvalue().strip()}") from None
    finally:
        argparse.ArgumentParser.parse_args = parse
        sys.argv = saved_argv
    raise AssertionError(f"{module}: main() returned without parsing its arguments")


def check_pip(tokens: list[str]) -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for token in tokens[2:]:
        for group in re.findall(r"\[([\w,-]+)\]", token):
            for extra in group.split(","):
                assert extra in extras, f"no extra [{extra}]"
        if token.startswith("--") and token not in ("--no-deps", "--quiet", "-q"):
            raise AssertionError(f"unexpected pip option {token}")


def check_command(command: str) -> None:
    if command in ("do", "done"):
        return
    assigned = re.match(r'^[A-Z0-9_]+=\$\(python -c "(.*)"\)$', command)
    if assigned:  # a value computed by Python: its imports must resolve
        for statement in assigned.group(1).split(";"):
            if statement.strip().startswith(("from ", "import ")):
                exec(statement.strip(), {})
        return
    if command.startswith(NOT_CHECKED):
        return
    tokens = shlex.split(command.replace("$(gem-tasks lm-eval-path)", "PATH"))
    head = tokens[0]
    if head == "inspect":
        check_inspect(tokens)
    elif head == "gem-tasks":
        check_gem_tasks(tokens)
    elif head == "python" and tokens[1] == "-m":
        check_python_module(tokens)
    elif head == "pip":
        check_pip(tokens)
    elif head == "bash":
        script = REPO / tokens[1]
        assert script.exists(), command
        for option in tokens[2:]:  # each an option the script's own case statement handles
            assert option.startswith("--") and f"    {option})" in script.read_text(), command
    elif head in ("lm_eval", "vllm"):
        pass  # checked against the installed tools' --help in the slow test below
    else:
        raise AssertionError(f"a command the docs test does not know how to check: {command}")


def test_every_shell_command_shown_names_what_exists():
    commands = shell_commands()
    assert len(commands) > 60  # the docs show commands; the parser must find them
    problems = []
    for page, command in commands:
        try:
            check_command(command)
        except Exception as error:  # report every bad command at once
            problems.append(f"{page}: {command!r}: {error}")
    assert not problems, "\n".join(problems)


def test_a_wrong_command_is_caught():
    for bad, why in (
        ("inspect eval gem_tasks/iclr -T scorer_llm=x", "no parameter scorer_llm"),
        ("inspect eval gem_tasks/nope", "unknown task"),
        ("gem-tasks leaderboard logs --no-such-flag", "no option --no-such-flag"),
        ("python -m benchmarks.speed.scoring --pairz 3", "unrecognized arguments: --pairz"),
        (
            "python -m benchmarks.speed.finetune_precision --data DIR",
            "the following arguments are required: --out",
        ),
        ("python -m benchmarks.speed.scoring --pairs many", "invalid int value: 'many'"),
        ("pip install .[gpu]", r"no extra \[gpu\]"),
        ("inspect score x.eval --scorer gem_tasks/bleu -S nope=1", "no option nope"),
    ):
        with pytest.raises(AssertionError, match=why):
            check_command(bad)


def vllm_serve_options() -> set[str]:
    """The options ``vllm serve`` accepts, from vLLM's own parser (the CPU wheel's ``vllm``
    command cannot print them: its distribution is not named ``vllm``)."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        if os.environ.get("GEM_TASKS_REQUIRE_VLLM"):
            raise
        pytest.skip("vLLM is not installed")
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older vLLM
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:  # older vLLM
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    parser = make_arg_parser(FlexibleArgumentParser())
    return {s for action in parser._actions for s in action.option_strings}


@pytest.mark.slow
def test_the_external_tools_accept_the_options_shown():
    """lm_eval and vllm serve commands: every option shown is one the tool's parser has."""
    shown = {
        tool: {
            o for _, c in shell_commands() if c.startswith(tool) for o in option_names(c.split())
        }
        for tool in ("lm_eval", "vllm")
    }
    assert shown["lm_eval"] and shown["vllm"]
    run = subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--help"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not sorted(o for o in shown["lm_eval"] if o not in run.stdout)
    assert not sorted(shown["vllm"] - vllm_serve_options())


# -- Python snippets --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def logs_folder(tmp_path_factory) -> Path:
    """A folder with a real log of GEM, GEM-S and GEM-raw (one demo paper, the human baseline
    with the stored judgment summaries, the embedded evaluation LM; the session's score cache)."""
    from inspect_ai import eval as run_eval

    from gem_tasks.tasks.iclr import iclr

    work = tmp_path_factory.mktemp("snippets")
    [log] = run_eval(
        iclr(candidate="human", dataset_summaries=True),
        model="none",
        limit=1,
        log_dir=str(work / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    return work


def python_snippets() -> list[tuple[str, int, str]]:
    return [
        (str(page.relative_to(REPO)), k, code)
        for page in documented_markdown()
        for k, code in enumerate(fenced(page, "python"))
    ]


def test_the_docs_have_python_snippets():
    assert len(python_snippets()) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("page,k,code", python_snippets(), ids=lambda v: str(v)[:40])
def test_every_python_snippet_runs(page, k, code, logs_folder):
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=logs_folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"{page} snippet {k}:\n{run.stderr[-3000:]}"
