"""The documentation speaks to the project's users: no "workshop words", words about how the
project was built rather than about using it.

Scanned: the README, the CHANGELOG, every page under ``docs/``, every task's README and every
README under ``benchmarks/`` (code blocks included: a path in a command is read too). Files in a
``results/`` folder are not scanned: the benchmark scripts write them and nobody edits them by
hand (``user_markdown`` in ``tests/conftest.py``).

What counts as a workshop word: a work session or sitting, a machine leased or lent, the
project's seed material (seed papers, "the seed lost ..."; a random seed, ``seed 0``, ``--seed``
or "drawn with the seed" is fine), shared notes or a folder beside the repository that
holds them, an issue number (``issue #37``, ``(#37)``, ``since #33``), a design note outside the
repository (``DESIGN §9``), and "here" meaning the machine the project was built on ("reachable
here", "no network here", "ran here", "not here"). Provenance stays, in the reader's terms:
"measured on one H100 at commit X", "on a 2-core CPU", "the GEM paper", "not public".
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, user_markdown

WORK_SESSION = ("a work session", r"\bsessions?\b")
BARE_SEEDS = (
    "the project's seed material",
    r"(?<!random )(?<!split )(?<!sampling )(?<!bootstrap )(?<!different )\bseeds\b",
)
PROSE_ISSUE_NUMBER = ("an issue number", r"\bissues? #\d+|(?<!\])\(#\d+\b|(?<![\w&/(\]])#\d+\b")
WORKSHOP_WORDS: tuple[tuple[str, str], ...] = (
    WORK_SESSION,
    ("a sitting", r"\bsittings?\b"),
    ("a leased machine", r"\blease[sd]?\b|\bleasing\b"),
    ("a lent machine", r"\blent\b|\blends?\b"),
    ("the project's seed material", r"\bseed[- ](?:papers?|texts?|files?|material|folders?)\b"),
    ("the project's seed material", r"\bthe seed(?:'s)? (?:lost|gave|gives|says|as given)\b"),
    BARE_SEEDS,
    ("shared notes", r"\bshared[- ]notes\b"),
    ("a folder outside the repository", r"\.\./shared\b|\bshared/(?:data|seeds|specs|notes)\b"),
    (
        "data outside the repository",
        r"\bthe shared (?:data|files?|articles|records)\b|\bshared data\b",
    ),
    PROSE_ISSUE_NUMBER,
    ("a design note outside the repository", r"\bDESIGN(?:\.md)?\s*§"),
    (
        "'here' meaning the build machine",
        r"\b(?:reachable|network|ran|run|runs|machine|not|measured|timed) here\b",
    ),
    ("the build machine", r"\bthis project's (?:\d+-core|CPU|GPU|machine)"),
    ("the tool that lends a GPU machine", r"\bthe device tool\b"),
    (
        "an internal checklist",
        r"\bspec [a-z_]+\.md\b|\bspec (?:[A-D]\.\d|D A\d|M\d|§\d)|\bspecs?/[a-z_]+\.md\b",
    ),
)


UPSTREAM_REFERENCE = re.compile(r"[\w.-]+/[\w.-]+\s+$")
"""An upstream repository named before its own issue number (``ahans30/Binoculars issue #27``)."""


def workshop_words(
    text: str, words: tuple[tuple[str, str], ...] = WORKSHOP_WORDS
) -> list[tuple[int, str, str]]:
    """(line number, phrase, what it is) for every workshop word in a text (an upstream
    repository's own issue number is a citation, not one)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        matches = sorted(
            (m.start(), m.end(), m.group(0), what)
            for what, pattern in words
            for m in re.finditer(pattern, line, re.I)
            if not (what == "an issue number" and UPSTREAM_REFERENCE.search(line[: m.start()]))
        )
        end = -1
        for start, stop, phrase, what in matches:  # one report per phrase ("the seed papers")
            if start >= end:
                found.append((number, phrase, what))
            end = max(end, stop)
    return found


def workshop_words_in(
    paths: list[Path], root: Path = REPO, words: tuple[tuple[str, str], ...] = WORKSHOP_WORDS
) -> list[str]:
    """``file:line: "phrase" (what it is)`` for every workshop word in the files."""
    return [
        f'{path.relative_to(root)}:{number}: "{phrase}" ({what})'
        for path in paths
        for number, phrase, what in workshop_words(path.read_text(encoding="utf-8"), words)
    ]


def test_the_docs_use_no_workshop_words():
    pages = user_markdown()
    assert len(pages) > 40  # README, docs/, the task and benchmark READMEs
    problems = workshop_words_in(pages)
    assert not problems, "words about how the project was built, not about using it:\n" + (
        "\n".join(problems)
    )


def test_a_planted_workshop_word_is_caught(tmp_path: Path):
    for text, phrase in (
        ("Measured in one session on two cores.", "session"),
        ("Runs longer than a sitting resume.", "sitting"),
        ("What a lease buys differs by run.", "lease"),
        ("Where a GPU is lent, run the script.", "lent"),
        ("The other metrics of the project's seed papers.", "seed papers"),
        ("Reconstructed from the prose (the seed lost them).", "the seed lost"),
        ("Every formula is in the seeds.", "seeds"),
        ("See the shared notes.", "shared notes"),
        ("The device tool removed the journal.", "The device tool"),
        ("`--data " + "../" + "shared/data/x.json`", "../" + "shared"),
        ("# Gaming (issue #12)", "issue #12"),
        ("The rewrite budget (#33) changed it.", "(#33"),
        ("grows with the review since #33", "#33"),
        ("No network here, so it was skipped.", "network here"),
        ("the remaining 185 ran here", "ran here"),
        ("Not here: a QA column.", "Not here"),
        ("moves GEM values (DESIGN §9: 0.6 nats)", "DESIGN §"),
    ):
        found = workshop_words(f"A first line.\n{text}\n")
        assert [(n, p.lower()) for n, p, _ in found] == [(2, phrase.lower())], text
    page = tmp_path / "page.md"
    page.write_text("# Page\n\nIt took 3 minutes in one session.\n")
    assert workshop_words_in([page], tmp_path) == ['page.md:3: "session" (a work session)']


def test_legitimate_seeds_and_heres_pass():
    text = (
        "Both samples are drawn with seed 0 (`--seed 3`, `-T seed=1`; the `seed` parameter).\n"
        "A random seed, the split seeds, another seed, reviews drawn with the seed.\n"
        "They depend only on the seed and the ids; seeded draws.\n"
        "The reply is quoted here; the results are [recorded here](images/demo.md).\n"
        "Anchors are fine: [Stale](#stale), [a section](page.md#the-cost-of-the-cells).\n"
        "HTML entities are fine: &#8212; and a URL's fragment https://x.org/a#1.\n"
        "An upstream citation is fine: the observer (ahans30/Binoculars issue #27).\n"
    )
    assert workshop_words(text) == []


CODE_WORKSHOP_WORDS: tuple[tuple[str, str], ...] = tuple(
    # in code, "session" is pytest's or HTTP's, "seeds" a random generator's, and a bare "#1" a
    # comment or a colour: those are checked in the prose only
    word
    for word in WORKSHOP_WORDS
    if word not in (WORK_SESSION, BARE_SEEDS, PROSE_ISSUE_NUMBER)
) + (("an issue number", r"\bissues? #\d+|\(#\d+\)|\bsince #\d+"),)
"""The workshop words a code comment or docstring is checked for."""

CODE_FOLDERS = ("gem_tasks", "scorers", "benchmarks", "prompts", "scripts", "tests", ".ci")
CODE_SUFFIXES = {".py", ".sh", ".jinja", ".toml", ".yaml", ".yml", ""}


def source_files(root: Path = REPO) -> list[Path]:
    """The project's code, prompts and scripts (written results and this file's examples left
    out)."""
    files = []
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            parts = path.relative_to(root).parts
            if (
                path.is_file()
                and path.suffix in CODE_SUFFIXES
                and "results" not in parts
                and "__pycache__" not in parts
                and path != Path(__file__).resolve()
            ):
                files.append(path)
    return files


INTERNAL_CHECKLIST = next(w for w in WORKSHOP_WORDS if w[0] == "an internal checklist")


def test_the_code_uses_no_workshop_words():
    files = source_files()
    assert len(files) > 200
    # a prompt's bytes are its identity (its hash is in every signature that used it): its
    # header comment keeps the section it was written from
    prompts = [f for f in files if f.suffix == ".jinja"]
    problems = workshop_words_in(
        [f for f in files if f not in prompts], words=CODE_WORKSHOP_WORDS
    ) + workshop_words_in(
        prompts, words=tuple(w for w in CODE_WORKSHOP_WORDS if w != INTERNAL_CHECKLIST)
    )
    assert not problems, "comments about how the project was built, not about using it:\n" + (
        "\n".join(problems)
    )


def test_a_planted_workshop_word_in_code_is_caught():
    for text, phrase in (
        ('"""The leaderboard page (issue #37): one file."""', "issue #37"),
        ("# the Scoring Rules cells (#14)", "(#14)"),
        ("# runs longer than one sitting", "sitting"),
        ("# on a lent GPU", "lent"),
        ("# 4-bit loading cannot run here", "run here"),
        ("# from the seed text (it lost every formula)", "seed text"),
    ):
        found = workshop_words(text, CODE_WORKSHOP_WORDS)
        assert [p.lower() for _, p, _ in found] == [phrase.lower()], text
    legitimate = (
        "# the observer (ahans30/Binoculars issue #27)\n"
        "color: #222; scope='session'; seeds = (0, 1); row #1\n"
    )
    assert workshop_words(legitimate, CODE_WORKSHOP_WORDS) == []
