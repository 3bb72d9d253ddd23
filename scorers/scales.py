"""The rating scale a dataset's ratings are on, and where its accept side begins.

Every number that reads a rating (the decision rules and verdicts, rating errors, the verdict
question the model under test answers) takes the scale from the data: a record's
``rating_scale`` field when it names one (the OpenReview builder writes the form's: ICLR's
own values, NeurIPS mapped onto ``iclr``), else its venue (ICLR 2020's {1,3,6,8}, ICLR 2021-2025's
{1,3,5,6,8,10}, ICLR 2026's {0,2,4,6,8,10}); the ratings of another venue that declares no
scale have none, and reading one is an error saying how to give it. The scale's accept
threshold is its lowest rating on the accept side: 6 on all of them ("marginally above the
acceptance threshold", ICLR 2020's "weak accept").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_SCALE",
    "HOW_TO_GIVE",
    "SCALES",
    "UNKNOWN",
    "VenueScale",
    "scale_named",
    "to_iclr",
    "venue_scale_name",
]


@dataclass(frozen=True)
class VenueScale:
    """A venue's rating scale: its values, the lowest rating on its accept side, and the
    meaning of each value as the verdict question states it."""

    name: str
    values: tuple[float, ...]
    accept_threshold: float
    labels: tuple[tuple[float, str], ...]
    description: str
    on_iclr: tuple[tuple[float, float], ...] = ()
    """Each value's place on ICLR's scale (``iclr``: the label of the same rank), where the
    values differ from it: the one conversion, which the OpenReview builder's filters and every
    comparison across editions use (:func:`to_iclr`). Empty: the values are ICLR's."""

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def contains(self, rating: float) -> bool:
        """Whether a stated rating is on the scale's range (a model may state a value between
        two of the form's values: it is read as stated)."""
        return self.low <= rating <= self.high

    def accepts(self, rating: float) -> bool:
        """Whether a rating is on the accept side."""
        return rating >= self.accept_threshold

    def points(self) -> str:
        """The labelled values, as the verdict question lists them."""
        return ", ".join(f"{value:g}: {label}" for value, label in self.labels)


_ICLR_LABELS = (
    (1.0, "strong reject"),
    (3.0, "reject"),
    (5.0, "marginally below the acceptance threshold"),
    (6.0, "marginally above the acceptance threshold"),
    (8.0, "accept"),
    (10.0, "strong accept"),
)

SCALES: dict[str, VenueScale] = {
    scale.name: scale
    for scale in (
        VenueScale(
            "iclr",
            (1.0, 3.0, 5.0, 6.0, 8.0, 10.0),
            6.0,
            _ICLR_LABELS,
            "ICLR 2021-2025's recommendation {1,3,5,6,8,10} on a 1-10 range, onto which the "
            "OpenReview builder maps every venue's form",
        ),
        VenueScale(
            "iclr2020",
            (1.0, 3.0, 6.0, 8.0),
            6.0,
            ((1.0, "reject"), (3.0, "weak reject"), (6.0, "weak accept"), (8.0, "accept")),
            "ICLR 2020's rating {1,3,6,8}",
        ),
        VenueScale(
            "iclr2018",
            tuple(float(v) for v in range(1, 11)),
            6.0,
            _ICLR_LABELS,
            "ICLR 2018-2019's rating 1-10",
        ),
        VenueScale(
            "iclr2026",
            (0.0, 2.0, 4.0, 6.0, 8.0, 10.0),
            6.0,
            (
                (0.0, "strong reject"),
                (2.0, "reject"),
                (4.0, "marginally below the acceptance threshold"),
                (6.0, "marginally above the acceptance threshold"),
                (8.0, "accept"),
                (10.0, "strong accept"),
            ),
            "ICLR 2026's rating {0,2,4,6,8,10} (its values as the reviews store them; the "
            "labels are the ICLR 2024 labels of the same rank)",
            on_iclr=((0.0, 1.0), (2.0, 3.0), (4.0, 5.0), (6.0, 6.0), (8.0, 8.0), (10.0, 10.0)),
        ),
    )
}

DEFAULT_SCALE = SCALES["iclr"]
_ICLR_YEAR = re.compile(r"\bICLR\b\D*(\d{4})", re.IGNORECASE)


UNKNOWN = ""
"""The scale name of ratings whose scale is not known (no ``rating_scale``, a venue whose scale
is not one of :data:`SCALES`): reading such a rating is an error, never ICLR's scale by
default."""

HOW_TO_GIVE = (
    f"give each record a 'rating_scale' field (one of {', '.join(sorted(SCALES))}), or ask "
    "for the scale to be added"
)
"""What an error about an unknown scale tells the reader to do."""


def to_iclr(rating: float, scale: str) -> float:
    """``rating`` of ``scale`` on ICLR's scale (the value of the same label), so that ratings of
    two editions are compared on one scale; a value the scale does not have is a
    ``ValueError``."""
    table = dict(scale_named(scale).on_iclr)
    if not table:
        return float(rating)
    if float(rating) not in table:
        raise ValueError(f"{rating:g} is not a value of the {scale} scale")
    return table[float(rating)]


def scale_named(name: str) -> VenueScale:
    """The scale of that name; ``ValueError`` naming the scales otherwise (and saying how to
    give one, for ratings of no known scale)."""
    if name == UNKNOWN:
        raise ValueError(f"the ratings' scale is not known: {HOW_TO_GIVE}")
    try:
        return SCALES[name]
    except KeyError:
        raise ValueError(f"unknown rating scale {name!r}; known: {sorted(SCALES)}") from None


def venue_scale_name(venue: str | None, declared: str | None = None) -> str:
    """The scale of a record's ratings: the one it declares, else its venue's (ICLR by year: 2020,
    2018-2019, 2026, the others ICLR 2021-2025's), else :data:`UNKNOWN`."""
    if declared:
        return scale_named(declared).name
    found = _ICLR_YEAR.search(venue or "")
    if found:
        year = int(found.group(1))
        if year == 2020:
            return "iclr2020"
        if year in (2018, 2019):
            return "iclr2018"
        if year == 2026:
            return "iclr2026"
        return DEFAULT_SCALE.name
    return UNKNOWN
