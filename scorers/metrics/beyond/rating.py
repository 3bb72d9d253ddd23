"""Rating error (Beyond Rating §5, the baseline of Table 3): how far the review's rating is from
the experts'.

MAE_p = |r̂ − mean_j r_j| (``against="mean"``, our choice) or mean_j |r̂ − r_j|
(``against="each"``), with r̂ the rating read from the review (``Rating: 6``, ``<rating>6</rating>``)
and r_j the reference reviews' ratings on the dataset's scale (:mod:`scorers.scales`: the
record's, e.g. ICLR 2026's 0-10; the builder maps every form onto ICLR's), on which a rating read
from the review must lie. When the candidate is the held-out human review itself (the human baseline
row), r̂ is that review's stored rating from the data: a human review's text rarely states it,
and the form's value is what the reviewer gave. The model's number is the mean over papers with
a readable rating; a review whose rating cannot be read is unscored with the reason (never 0); a
paper whose references carry no rating is unscored. Lower is better. No model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scorers.errors import Unscored
from scorers.metrics.beyond.family import BeyondMetric
from scorers.options import MetricOptions, option
from scorers.resources import Resources
from scorers.scales import scale_named
from scorers.text.structured import parse_review
from scorers.types import Item

__all__ = ["RatingErrorMetric", "rating_error"]


def rating_error(rating: float, expert_ratings: list[float], *, against: str = "mean") -> float:
    if not expert_ratings:
        raise ValueError("no expert rating")
    if against == "mean":
        return abs(rating - sum(expert_ratings) / len(expert_ratings))
    if against == "each":
        return sum(abs(rating - r) for r in expert_ratings) / len(expert_ratings)
    raise ValueError(f"against must be 'mean' or 'each', got {against!r}")


@dataclass(frozen=True)
class RatingErrorOptions(MetricOptions):
    against: Literal["mean", "each"] = option(
        "mean",
        "`mean`: the error against the experts' mean rating; `each`: the mean error against "
        "each expert",
    )


class RatingErrorMetric(BeyondMetric):
    options: RatingErrorOptions

    choices = {
        "mae": "|rating - mean expert rating| per paper, averaged over papers",
        "human_baseline": "the held-out human review's stored rating when it is the candidate",
    }

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        if not item.candidate.strip():
            raise Unscored("empty candidate: there is no review to read")
        scale = scale_named(item.paper.rating_scale)
        details["rating_scale"] = scale.name
        if item.candidate_is_held_out and item.held_out.rating is not None:
            rating, source = float(item.held_out.rating), "stored with the held-out review"
        else:
            parsed = parse_review(item.candidate, rating_range=(scale.low, scale.high))
            rating, source = parsed.scores["rating"], "read from the review"
            if rating is None:
                why = (
                    "; ".join(i for i in parsed.issues if i.startswith("rating"))
                    or "no rating field"
                )
                raise Unscored(f"the review's rating cannot be read ({why})")
        experts = {r.id: r.rating for r in item.references if r.rating is not None}
        if not experts:
            raise Unscored("no reference review has a rating")
        value = rating_error(rating, list(experts.values()), against=self.options.against)
        details.update({"rating": rating, "rating_source": source, "expert_ratings": experts})
        return value, f"rating {rating:g} vs experts {sorted(experts.values())}: error {value:.3f}"
