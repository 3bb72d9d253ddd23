"""Every relative link of the user-facing Markdown resolves as GitHub resolves it: relative to the
file that holds it, to a file or folder of the repository (tracked, or new and not ignored);
an anchor (``page.md#section``, ``#section``) names a heading of the Markdown file it points at,
slugged as GitHub slugs headings. Links to http(s) and mailto addresses are not followed.

The site's build checks its own links (``test_the_site_builds_strictly``), but through the
mkdocs hook (``docs/hooks.py``), which maps ``docs/X`` to ``X``: a link written for the site's
layout can work there and be broken on GitHub. This test reads the files as GitHub does. The
files are those of the words test (``user_markdown`` in ``tests/conftest.py``: results folders
left out).
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

from conftest import REPO, user_markdown, without_code_blocks

LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
"""An inline link or image: ``[text](target)``, ``![alt](target "title")``."""
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
"""A target with a scheme (``https:``, ``mailto:``): not a repository path."""


def repository_files(root: Path) -> set[str] | None:
    """The repository's files as GitHub would hold them (tracked, or new and not ignored), as
    paths relative to the root; None where ``root`` is not a git checkout."""
    run = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0 or not (root / ".git").exists():
        return None
    return {p for p in run.stdout.split("\0") if p and (root / p).exists()}


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link and image outside code blocks and code
    spans."""
    text = without_code_blocks(text)
    text = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), text)  # text kept, code blanked
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        found += [(number, m.group(1)) for m in LINK.finditer(line)]
    return found


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text (duplicates numbered)."""
    anchors: set[str] = set()
    for line in without_code_blocks(text).split("\n"):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))  # a link: its text
        title = title.replace("`", "").replace("*", "").lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        candidate, k = slug, 0
        while candidate in anchors:
            k += 1
            candidate = f"{slug}-{k}"
        anchors.add(candidate)
    return anchors


def broken_links(paths: list[Path], root: Path = REPO) -> list[str]:
    """``file:line:target (why)`` for every relative link that GitHub could not follow."""
    files = repository_files(root)

    def exists(relative: str) -> bool:
        if files is None:
            return (root / relative).exists()
        return relative in files or any(f.startswith(relative + "/") for f in files)

    problems = []
    for path in paths:
        source = path.relative_to(root).as_posix()
        for number, target in links(path.read_text(encoding="utf-8")):
            if EXTERNAL.match(target):
                continue
            where = f"{source}:{number}:{target}"
            file_part, _, anchor = target.partition("#")
            if not file_part:
                resolved = source
            else:
                base = "" if file_part.startswith("/") else posixpath.dirname(source)
                resolved = posixpath.normpath(posixpath.join(base, unquote(file_part).lstrip("/")))
                if resolved == ".." or resolved.startswith("../"):
                    problems.append(f"{where} (outside the repository)")
                    continue
                if not exists(resolved):
                    problems.append(f"{where} (no such file: {resolved})")
                    continue
            if anchor and resolved.endswith(".md") and (root / resolved).is_file():
                if anchor.lower() not in github_anchors((root / resolved).read_text()):
                    problems.append(f"{where} (no heading #{anchor} in {resolved})")
    return problems


def test_every_relative_link_resolves_on_github():
    pages = user_markdown()
    assert sum(len(links(p.read_text())) for p in pages) > 200  # the parser finds the links
    problems = broken_links(pages)
    assert not problems, "links that do not resolve on GitHub:\n" + "\n".join(problems)


def test_a_broken_link_is_caught(tmp_path: Path):
    (tmp_path / "docs" / "metrics").mkdir(parents=True)
    (tmp_path / "docs" / "metrics" / "gem.md").write_text("# GEM\n\n## Known limits\n")
    (tmp_path / "README.md").write_text("# Top\n")
    page = tmp_path / "docs" / "tasks.md"
    page.write_text(
        "# Tasks\n\n"
        "[fine](metrics/gem.md), [also](../README.md), [a section](metrics/gem.md#known-limits)\n"
        "[a web page](https://example.org/x.md), [mail](mailto:a@b.c), [up](#tasks)\n"
        "```bash\n[not a link](nowhere.md)\n```\n"
        "`[not a link either](nowhere.md)`\n"
        "[broken](gem.md) and ![a picture](images/none.png)\n"
        "[site-only layout](../metrics/gem.md), [no section](metrics/gem.md#nope)\n"
        "[no anchor here](#nope)\n"
    )
    assert broken_links([page], tmp_path) == [
        "docs/tasks.md:9:gem.md (no such file: docs/gem.md)",
        "docs/tasks.md:9:images/none.png (no such file: docs/images/none.png)",
        "docs/tasks.md:10:../metrics/gem.md (no such file: metrics/gem.md)",
        "docs/tasks.md:10:metrics/gem.md#nope (no heading #nope in docs/metrics/gem.md)",
        "docs/tasks.md:11:#nope (no heading #nope in docs/tasks.md)",
    ]


def test_github_anchors_are_slugged_as_github_slugs_them():
    text = (
        "# The `gem-tasks leaderboard` command\n## Runs longer than an hour\n## Stale\n## Stale\n"
    )
    assert github_anchors(text) == {
        "the-gem-tasks-leaderboard-command",
        "runs-longer-than-an-hour",
        "stale",
        "stale-1",
    }
