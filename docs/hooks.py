"""mkdocs hooks: the documentation site shows the files that live beside the code.

Findings live beside their results (``benchmarks/experiments/<name>/README.md``) and each task's
page is its own README (``gem_tasks/tasks/<task>/README.md``, with its ``eval.yaml``; the top-level
``CHANGELOG.md`` says what changed between versions), so the site takes those files from where they
are instead of copying them into ``docs/``. Every Markdown link
in the repository is written relative to the file it is in, as GitHub reads it; the site puts
``docs/X`` at ``X`` and a file outside ``docs/`` at its repository path, and this hook rewrites
each relative link from the one layout to the other. A link to a repository file that is not a
page (a results table, a JSON file, an eval card) makes the site carry that file, so that
``mkdocs build --strict`` checks every link, inside and outside ``docs/``.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
DOCS = "docs"
# pages the site takes from outside docs/ (repository paths, globbed)
PAGES = (
    "CHANGELOG.md",
    "gem_tasks/tasks/*/README.md",
    "benchmarks/README.md",
    "benchmarks/speed/README.md",
    "benchmarks/experiments/*/README.md",
)
LINK = re.compile(r"(?<!!)\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SKIP = ("http://", "https://", "mailto:", "#", "/")


def site_path(repo_path: str) -> str:
    """Where a repository file lives in the site: ``docs/X`` at ``X``, others where they are."""
    return repo_path[len(DOCS) + 1 :] if repo_path.startswith(DOCS + "/") else repo_path


def repo_path(site: str, external: set[str]) -> str:
    """The repository path of a site file (the inverse of :func:`site_path`)."""
    return site if site in external else f"{DOCS}/{site}"


def split_target(target: str) -> tuple[str, str]:
    path, hash_, anchor = target.partition("#")
    return path, hash_ + anchor


def linked_files(markdown_repo_path: str) -> set[str]:
    """The repository files a Markdown file links to (relative links only)."""
    text = (REPO / markdown_repo_path).read_text()
    found = set()
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if target.startswith(SKIP):
            continue
        path, _ = split_target(target)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(markdown_repo_path), path))
        if (REPO / resolved).is_file():
            found.add(resolved)
    return found


def make_file(path: str, config) -> File:
    return File(
        path,
        src_dir=str(REPO),
        dest_dir=config["site_dir"],
        use_directory_urls=config["use_directory_urls"],
    )


def on_files(files: Files, config) -> Files:
    external: set[str] = set()
    for pattern in PAGES:
        external.update(str(p.relative_to(REPO)) for p in sorted(REPO.glob(pattern)))
    pages = [f"{DOCS}/{f.src_uri}" for f in files.documentation_pages()] + sorted(external)
    seen = set(pages)
    queue = list(pages)
    while queue:  # pages outside docs/ link to more files outside docs/
        for target in sorted(linked_files(queue.pop())):
            if target.startswith(DOCS + "/") or target in seen:
                continue
            seen.add(target)
            external.add(target)
            if target.endswith(".md"):
                queue.append(target)
    for path in sorted(external):
        files.append(make_file(path, config))
    config["gem_tasks_external"] = external
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    external = config["gem_tasks_external"]
    source = repo_path(page.file.src_uri, external)

    def rewrite(match: re.Match) -> str:
        target = match.group(1) or match.group(2)
        if target.startswith(SKIP):
            return match.group(0)
        path, anchor = split_target(target)
        if not path:
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if resolved == "README.md":
            return match.group(0)  # the top-level README is not part of the site
        new = posixpath.relpath(site_path(resolved), posixpath.dirname(page.file.src_uri) or ".")
        return match.group(0).replace(f"({target})", f"({new}{anchor})")

    return LINK.sub(rewrite, markdown)
