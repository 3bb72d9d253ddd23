"""Negative references: reviews of other papers, the sample of the product distribution
P_X ⊗ P_Y that the f-variational metrics need (Scoring Rules paper §2, App. C Eq. 7, App. D.1:
"4 negative references sampled from other tasks in the same dataset group").

Per paper, ``k`` other papers of the same group (records with the same ``venue``) are drawn without
replacement, and one non-empty review of each; never a record of the paper's own entity (a
hotel's other aspects in SPACE: :attr:`~scorers.data.records.PaperRecord.entity`). The draw
depends only on (seed, paper id, the dataset's paper and review ids), so it is the same for
every model scored, for the before and after sides of a perturbation test, and across runs and
machines. A paper never gets its own
reviews as negatives; a group too small to supply ``k`` other papers with a review is a
:class:`~scorers.data.records.RecordError`, never a shorter list.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from scorers.data.records import PaperRecord, RecordError, ReviewRecord

__all__ = ["DEFAULT_NEGATIVES", "Negative", "draw_negatives", "entity_of", "group_of"]

DEFAULT_NEGATIVES = 4
"""Negatives per item (Scoring Rules paper App. D.1)."""


@dataclass(frozen=True)
class Negative:
    """A review of another paper, named ``<paper id>/<review id>``."""

    paper_id: str
    review: ReviewRecord

    @property
    def id(self) -> str:
        return f"{self.paper_id}/{self.review.id}"


def _rng(seed: int, paper_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:negatives:{paper_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def group_of(record: PaperRecord) -> str:
    """The group negatives and random replacements are drawn within: the record's ``group``,
    else its venue (peer review: papers of one venue)."""
    return record.group if record.group is not None else record.venue


def entity_of(record: PaperRecord) -> str:
    """What the record is about (:attr:`PaperRecord.entity`, else the record itself): two
    records of one entity (a hotel's aspects) are never each other's negatives."""
    return record.entity if record.entity is not None else f"record:{record.id}"


def draw_negatives(
    paper: PaperRecord, pool: Sequence[PaperRecord], *, k: int = DEFAULT_NEGATIVES, seed: int = 0
) -> tuple[Negative, ...]:
    """``k`` reviews of ``k`` distinct other papers of ``paper``'s group (:func:`group_of`) in
    ``pool``, none of ``paper``'s entity (:func:`entity_of`).

    Raises RecordError when the group has fewer than ``k`` other papers with a non-empty review,
    ValueError for ``k < 1``.
    """
    if k < 1:
        raise ValueError(f"the number of negatives must be at least 1, got {k}")
    eligible = sorted(
        (
            other
            for other in pool
            if other.id != paper.id
            and entity_of(other) != entity_of(paper)
            and group_of(other) == group_of(paper)
            and any(r.text.strip() for r in other.reviews)
        ),
        key=lambda record: record.id,
    )
    if len(eligible) < k:
        raise RecordError(
            f"paper {paper.id!r}: {k} negative reference(s) need {k} other paper(s) of group "
            f"{group_of(paper)!r} (and of another entity) with a non-empty review; the dataset "
            f"has {len(eligible)}"
        )
    rng = _rng(seed, paper.id)
    chosen = rng.sample(eligible, k)
    out = []
    for other in chosen:
        reviews = sorted((r for r in other.reviews if r.text.strip()), key=lambda r: r.id)
        out.append(Negative(other.id, rng.choice(reviews)))
    return tuple(out)
