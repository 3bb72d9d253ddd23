"""Existing candidates counted once per distinct text.

A dataset published one record per compared pair (LFQA-E: each question's answers compared two
at a time) holds each answer several times: scored as it appears, the same text would count
once per pair it is in, and a paired test or a mean over samples would treat the copies as
independent observations. :func:`distinct_candidates` keeps one candidate per distinct text of
an entity (:func:`~scorers.data.negatives.entity_of`: the question, the article) and lists every
place it appears (:data:`MEMBERS`: record, candidate and that place's human ratings), so that
nothing is lost: a preference pair is rebuilt from its two members, and a text rated in
several places has each of its ratings.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from scorers.data.negatives import entity_of
from scorers.data.records import CandidateRecord, PaperRecord

__all__ = [
    "MEMBERS",
    "Candidate",
    "CandidateKind",
    "DistinctCandidate",
    "distinct_candidates",
    "mean_ratings",
]

CandidateKind = Literal["model", "human", "baseline", "system", "candidates"]
"""What a run scores: the model under test's text (``model``), the held-out human report
(``human``), a decision rule's verdict with no text (``baseline:<rule>``), one existing system's
text (``system:<id>``), or every existing candidate (``candidates``)."""

_FORMS = {
    "model": "'model'",
    "human": "'human'",
    "candidates": "'candidates'",
    "system": "'system:<id>'",
    "baseline": "'baseline:<rule>'",
}


@dataclass(frozen=True)
class Candidate:
    """A task's ``candidate`` setting, parsed once (:meth:`parse`): its kind and, for
    ``baseline:<rule>`` and ``system:<id>``, the rule or the system's id. ``str()`` gives the
    setting back as it is written."""

    kind: CandidateKind
    name: str = ""

    @classmethod
    def parse(
        cls, text: str, *, allowed: Sequence[CandidateKind], rules: Collection[str] = ()
    ) -> Candidate:
        """The candidate ``text`` names, one of the ``allowed`` kinds (a baseline's rule one of
        ``rules``).

        Raises:
            ValueError: another kind, a rule not among ``rules``, a system with no id, or a
                name after a kind that takes none; the message lists the forms allowed.
        """
        kind, colon, name = str(text).partition(":")
        named = kind in ("baseline", "system")
        valid = (
            kind in allowed
            and (bool(name) if named else not colon)
            and (kind != "baseline" or name in rules)
        )
        if not valid:
            forms = [_FORMS[k] for k in _FORMS if k in allowed]
            listed = forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]
            rule = f" with a rule of {sorted(rules)}" if "baseline" in allowed else ""
            raise ValueError(f"candidate must be {listed}{rule}, got {text!r}")
        return cls(kind, name)  # type: ignore[arg-type]

    @property
    def generates(self) -> bool:
        """Whether the model under test writes the text scored."""
        return self.kind == "model"

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind


MEMBERS = "members"
"""Sample metadata key: every place a distinct candidate text appears, as ``{"record",
"candidate", "ratings"}``, in the data's order."""


@dataclass(frozen=True)
class DistinctCandidate:
    """One distinct candidate text of an entity: the record and candidate it first appears as,
    and every place it appears (its first included)."""

    record: PaperRecord
    candidate: CandidateRecord
    members: tuple[dict[str, Any], ...]


def distinct_candidates(records: Sequence[PaperRecord]) -> list[DistinctCandidate]:
    """Every candidate of ``records`` once per (entity, text) (the text compared with surrounding
    whitespace aside), in the order of first appearance."""
    order: list[tuple[str, str]] = []
    first: dict[tuple[str, str], tuple[PaperRecord, CandidateRecord]] = {}
    members: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        for candidate in record.candidates:
            key = (entity_of(record), candidate.text.strip())
            if key not in first:
                order.append(key)
                first[key] = (record, candidate)
                members[key] = []
            members[key].append(
                {"record": record.id, "candidate": candidate.id, "ratings": dict(candidate.ratings)}
            )
    return [DistinctCandidate(*first[key], tuple(members[key])) for key in order]


def mean_ratings(members: Sequence[dict[str, Any]]) -> dict[str, float]:
    """A distinct text's human rating per dimension: the mean over the places that rate it."""
    sums: dict[str, list[float]] = {}
    for member in members:
        for dimension, value in (member.get("ratings") or {}).items():
            sums.setdefault(dimension, []).append(float(value))
    return {dimension: sum(values) / len(values) for dimension, values in sums.items()}
