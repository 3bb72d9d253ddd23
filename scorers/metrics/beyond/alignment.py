"""Argumentative alignment (Beyond Rating §4.3): how far a review's strengths (or weaknesses)
are the arguments the experts made.

With A the candidate's points of one field, H_j expert j's points of the same field and
Match(a, h) ∈ {0, 1} a binary LLM judge (role ``judge``; Yes/No, the candidate's point first):

- Precision (Eq. 2, reconstructed): P = |{a ∈ A : ∃ j, h ∈ H_j, Match(a, h)}| / |A|, against
  the union of the experts;
- Max-Recall (Eq. 3, reconstructed): R_max = max_j |{h ∈ H_j : ∃ a ∈ A, Match(a, h)}| / |H_j|,
  against the best single expert (not the union, not the mean);
- F1 = 2 P R_max / (P + R_max) per paper (0 when both are 0), averaged over papers (Table 3's
  F1 values sit below the harmonic mean of the mean P and R, which is what this gives).

Edge cases (documented choices): an expert with no points is left out of the max; no
expert with points leaves the paper unscored; a candidate with no points in the field (empty or
missing) scores P = R = F1 = 0 with the flag ``empty_candidate_field``. A pair the judge answers
unreadably twice leaves the paper unscored with the reply quoted. Matching only ever compares
points of the same field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import prompts
from scorers.errors import Unscored
from scorers.lm.answers import YES_NO_SETTINGS, parse_yes_no
from scorers.lm.base import ChatMessage
from scorers.metrics.beyond.common import JUDGE_ROLE, ask_many
from scorers.metrics.beyond.family import BeyondMetric
from scorers.resources import Resources
from scorers.types import Item

__all__ = ["AlignmentMetric", "alignment_scores", "match_messages"]

QUANTITIES = ("precision", "recall", "f1")


def match_messages(candidate_point: str, expert_point: str) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render("beyond/match_system")},
        {
            "role": "user",
            "content": prompts.render(
                "beyond/match_user", candidate_point=candidate_point, expert_point=expert_point
            ),
        },
    ]


def alignment_scores(
    matches: Sequence[Mapping[str, Sequence[bool]]] | Sequence[Sequence[Sequence[bool]]],
) -> dict[str, float]:
    """P, R_max and F1 from a match table: ``matches[i][j][k]`` is Match(a_i, h_jk) (``j`` an
    expert key or index, ``k`` the expert's point). An expert with no points is left out of
    the max; ``matches`` with no candidate point gives zeros; no expert with a point raises
    ``ValueError``."""
    if not matches:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    rows = [dict(enumerate(m)) if not isinstance(m, Mapping) else dict(m) for m in matches]
    experts = list(rows[0])
    matched_a = sum(1 for row in rows if any(any(row[j]) for j in experts))
    precision = matched_a / len(rows)
    recalls = []
    for j in experts:
        size = len(rows[0][j])
        if size == 0:
            continue
        found = sum(1 for k in range(size) if any(row[j][k] for row in rows))
        recalls.append(found / size)
    if not recalls:
        raise ValueError("no expert has a point: recall is undefined")
    recall = max(recalls)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1}


class AlignmentMetric(BeyondMetric):
    """One of P, Max-Recall, F1 for strengths or weaknesses (fixed options ``field`` and
    ``quantity``)."""

    prompts = ("beyond/match_system", "beyond/match_user")
    uses_points = True
    uses_judge = True
    choices = {
        "precision": "against the union of the experts' points (Eq. 2, reconstructed)",
        "recall": "Max-Recall: the best single expert (Eq. 3, reconstructed)",
        "f1": "per paper, averaged over papers",
        "match": "binary Yes/No judge, candidate point first, temperature 0, one retry",
        "experts": "every human review of the paper but the held-out one",
    }

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        section = self.field or ""
        candidate, experts = await self.field_points(item, resources, details)
        if not candidate.points:
            scores = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        else:
            pairs = [
                (i, j, k)
                for i in range(len(candidate.points))
                for j in experts
                for k in range(len(experts[j].points))
            ]
            asked = await ask_many(
                resources.generator(JUDGE_ROLE),
                [
                    match_messages(candidate.points[i].text, experts[j].points[k].text)
                    for i, j, k in pairs
                ],
                parse_yes_no,
                settings=YES_NO_SETTINGS,
            )
            details["calls"]["judge"] += asked.calls
            if asked.failures:
                first = asked.failures[0]
                raise Unscored(
                    f"{len(asked.failures)} of {len(pairs)} match verdicts unreadable; "
                    f"first: {asked.reasons[first]}"
                )
            table = [
                {j: [False] * len(experts[j].points) for j in experts} for _ in candidate.points
            ]
            for (i, j, k), verdict in zip(pairs, asked.values):
                table[i][j][k] = bool(verdict)
            details["matches"] = [[i, j, k] for (i, j, k), v in zip(pairs, asked.values) if v]
            scores = alignment_scores(table)
        details.update({f"{section}_{q}": v for q, v in scores.items()})
        value = scores[self.quantity or "f1"]
        explanation = (
            f"{section}: P {scores['precision']:.3f}, Max-Recall {scores['recall']:.3f}, "
            f"F1 {scores['f1']:.3f} ({len(candidate.points)} candidate points, "
            f"{len(experts)} expert(s) with {sum(len(v.points) for v in experts.values())} points)"
        )
        return value, explanation
