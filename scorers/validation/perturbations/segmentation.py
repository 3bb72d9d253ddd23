"""Sentences, sections and judgment lines of a review, as the deletion strategies cut them.

Sentence segmentation (sentence deletion, deletion & completion), GEM paper App. D.1.1: the
ICLR 2023 section headers ("Summary Of The Paper", "Strengths And Weaknesses" or the form's own
spelling "Strength And Weaknesses", "Clarity, Quality, Novelty And Reproducibility", "Summary Of
The Review", with or without a colon) are kept unchanged, and so are other lines that are pure
format (a lone tag such as ``<strengths>``, a markdown heading, a line that is all bold); each
starts a new section. Sentences are those of :mod:`scorers.text.sentences` (a line break or a
"." / "?" / "!" followed by whitespace ends one; decimals, list markers, abbreviations and
initials such as "V. Stiviano" do not). Within a section sentences are numbered 1, 2,
3, ... across lines and paragraphs; odd-numbered ones are kept. Kept sentences of a line are
joined by one space, the line keeps its indentation, a line left with no sentence is removed
together with the blank line it would leave doubled.
"""

from __future__ import annotations

import re

from scorers.text.sentences import sentences

ICLR_SECTIONS = (
    "Summary Of The Paper",
    "Strengths And Weaknesses",
    "Clarity, Quality, Novelty And Reproducibility",
    "Summary Of The Review",
)
"""The four sections of an ICLR 2023 review (GEM paper App. D.1.1), as the paper spells them."""

_SECTION_ALIASES = {name.casefold(): name for name in ICLR_SECTIONS} | {
    # the OpenReview form's own field title, used in the GEM authors' released data
    "strength and weaknesses": "Strengths And Weaknesses",
}

_TAG_LINE = re.compile(r"</?[A-Za-z][\w-]*>")
_MARKDOWN_HEADING = re.compile(r"#{1,6}\s+\S.*")
_BOLD_LINE = re.compile(r"(\*\*|__)[^*_]+(\*\*|__):?")


def iclr_section(line: str) -> str | None:
    """The ICLR 2023 section a header line opens (canonical spelling), or None."""
    key = line.strip().lstrip("#").strip(" *_").removesuffix(":").strip(" *_")
    return _SECTION_ALIASES.get(" ".join(key.split()).casefold())


def is_format_line(line: str) -> bool:
    """An ICLR section header or another line that is pure format (kept, starts a section)."""
    stripped = line.strip()
    return bool(
        iclr_section(stripped)
        or _TAG_LINE.fullmatch(stripped)
        or _MARKDOWN_HEADING.fullmatch(stripped)
        or _BOLD_LINE.fullmatch(stripped)
    )


def every_other_sentence(text: str, placeholder: str | None) -> str:
    """Delete (placeholder None) or mask every even-numbered sentence of each section."""
    out: list[str] = []
    count = 0
    dropped = False  # a whole line was removed since the last line written
    for line in text.replace("\r\n", "\n").split("\n"):
        if is_format_line(line):
            count = 0
            out.append(line)
            dropped = False
            continue
        if not line.strip():
            if not (dropped and out and not out[-1].strip()):
                out.append(line)
            continue
        parts = []
        for sentence in sentences(line):
            count += 1
            if count % 2 == 1:
                parts.append(sentence)
            elif placeholder is not None:
                parts.append(placeholder)
        if parts:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + " ".join(parts))
            dropped = False
        else:
            dropped = True
    return "\n".join(out)


def kept_sentences(text: str) -> list[str]:
    """The sentences :func:`every_other_sentence` keeps (format lines aside), in order."""
    masked = every_other_sentence(text, "\n")
    return [
        sentence
        for line in masked.split("\n")
        if line.strip() and not is_format_line(line)
        for sentence in sentences(line)
    ]


def every_other_judgment(text: str) -> str:
    """The 1st, 3rd, ... non-blank lines, stripped, in the original layout: one per line, or
    separated by blank lines when the original separates its judgments so (the GEM release
    does), so that only information changes, not layout."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    spaced = "\n\n" in text.strip()
    return ("\n\n" if spaced else "\n").join(lines[::2])
