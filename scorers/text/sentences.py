"""The one sentence splitter of the perturbations and the gaming strategies.

A sentence ends at a line break, or at a run of ".", "?" or "!" (with any closing quotes or
brackets) followed by whitespace or the end of the line. Not an end:

- a decimal or a dotted name ("3.5", "arXiv.org"): no whitespace follows the dot;
- a list item's marker ("1. ", "a) ") at the start of a line;
- a common abbreviation ("e.g.", "i.e.", "et al.", "Fig.", "Eq.", "Dr.", "Mr.", "Jan.", ...);
- an initial or a run of initials ("V. Stiviano", "J. R. R. Tolkien", "U.S."): a single letter,
  or letters each followed by a dot, before the dot.

News text such as SummEval's articles is full of initials, so a splitter that ended a sentence
at "V." would make sentence deletion remove half-sentences. The cost is the rare sentence that
really ends with an initial ("... of the U.S. Then"), which is kept with the next one.

(BERTScore splits sentences as its authors' code does, a separate rule kept for fidelity:
:mod:`scorers.metrics.embedding`.)
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "sentences", "split_sentences"]

_SENTENCE_END = re.compile(r"[.?!]+[\"')\]\u2019\u201d]*(?=\s|$)")
_LIST_MARKER = re.compile(r"\s*(?:\d+(?:\.\d+)*[.)]|[A-Za-z]\))\s+")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")
ABBREVIATIONS = frozenset(
    (
        "e.g. i.e. al. cf. vs. fig. figs. eq. eqs. sec. sect. tab. appx. thm. lem. def. "
        "ref. refs. resp. approx. p. pp. dr. prof. mr. mrs. ms. st. jr. sr. inc. ltd. co. "
        "corp. dept. univ. gov. gen. lt. col. sgt. capt. rep. sen. jan. feb. mar. apr. aug. "
        "sep. sept. oct. nov. dec. est. ft. vol. etc."
    ).split()
)
"""Words ending with a dot that end no sentence (compared lower-case, opening brackets aside).
"etc." is among them: it ends sentences as often as not, and a kept pair is the lesser harm."""


def _ends_sentence(text_before: str, end: str) -> bool:
    """Whether the run ``end`` of "." / "?" / "!" after ``text_before`` ends a sentence."""
    if end.rstrip("\"')]\u2019\u201d") != ".":
        return True  # "?", "!", "..." and the like end one
    words = text_before.split()
    if not words:
        return True
    word = words[-1].lstrip("([\"'\u2018\u201c") + "."
    if word.lower() in ABBREVIATIONS:
        return False
    return not _INITIALS.fullmatch(word)


def sentences(line: str) -> list[str]:
    """The sentences of one line, stripped (a line break always ends a sentence)."""
    found = []
    marker = _LIST_MARKER.match(line)
    start = 0
    for match in _SENTENCE_END.finditer(line, marker.end() if marker else 0):
        if not _ends_sentence(line[start : match.start()], match.group()):
            continue
        sentence = line[start : match.end()].strip()
        if sentence:
            found.append(sentence)
        start = match.end()
    rest = line[start:].strip()
    if rest:
        found.append(rest)
    return found


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, line by line (:func:`sentences`); blank results are dropped."""
    return [s for line in text.replace("\r\n", "\n").split("\n") for s in sentences(line)]
