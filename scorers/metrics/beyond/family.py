"""The base of the Beyond Rating metrics: the candidate's and the experts' fields and points,
unscored results with their reasons, and the signature."""

from __future__ import annotations

from typing import Any

from scorers.errors import Unscored
from scorers.metrics.beyond.common import (
    BEYOND_VERSION,
    JUDGE_ROLE,
    PREPROCESSOR_ROLE,
    BeyondSignature,
    ReplyError,
)
from scorers.metrics.beyond.structure import (
    POINTS_SETTINGS,
    STRUCTURE_SETTINGS,
    Fields,
    Points,
    extract_points,
    review_fields,
)
from scorers.registry import Metric
from scorers.resources import Resources
from scorers.signature import prompt_hashes
from scorers.types import Item, Result, note_limits

__all__ = ["BeyondMetric"]

_STRUCTURE_PROMPTS = ("beyond/structure_system", "beyond/structure_user")
_POINT_PROMPTS = ("beyond/points_system", "beyond/points_user")


class BeyondMetric(Metric):
    """Shared machinery; subclasses implement :meth:`measure`."""

    choices: dict[str, str] = {}
    prompts: tuple[str, ...] = ()
    uses_points = False
    uses_judge = False
    uses_embedder = False

    def __init__(
        self, spec: Any, *, field: str | None = None, quantity: str | None = None, **options: Any
    ) -> None:
        super().__init__(spec, **options)
        self.field = field
        """The review field a metric reads (fixed at registration), when it reads one."""
        self.quantity = quantity
        """Which of a family's numbers this metric is (fixed at registration)."""

    def signature(self, resources: Resources) -> BeyondSignature:
        templates = list(self.prompts)
        preprocessor = ""
        if self.uses_points:
            templates += [*_STRUCTURE_PROMPTS, *_POINT_PROMPTS]
            preprocessor = resources.generator(PREPROCESSOR_ROLE).identity
        return BeyondSignature(
            metric=self.name,
            family="beyond",
            version=BEYOND_VERSION,
            preprocessor=preprocessor,
            judge=resources.generator(JUDGE_ROLE).identity if self.uses_judge else "",
            embedder=getattr(self.options, "embedder", "") if self.uses_embedder else "",
            choices={**self.choices, **self.option_choices()},
            prompts=prompt_hashes(templates),
        )

    def option_choices(self) -> dict[str, str]:
        fixed = {"field": self.field, "quantity": self.quantity}
        return {
            k: str(v)
            for k, v in sorted({**self.options.as_dict(), **fixed}.items())
            if v is not None
        }

    async def compute(self, item: Item, resources: Resources) -> Result:
        signature = self.signature(resources)
        details: dict[str, Any] = {"calls": {"preprocessor": 0, "judge": 0}}
        try:
            value, explanation = await self.measure(item, resources, details)
        except (Unscored, ReplyError) as exc:
            # what was asked before the item was given up stays in its details
            raise Unscored(str(exc), details=details, signature=signature) from exc
        return Result(value=value, explanation=explanation, details=details, signature=signature)

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        """The value and explanation of one item; ``details`` collects what was asked (calls,
        texts at their token limit, flags). Raises :class:`~scorers.errors.Unscored` (or a
        :class:`~scorers.lm.asking.ReplyError`) when the item cannot be scored."""
        raise NotImplementedError

    # -- shared steps --------------------------------------------------------------------------

    async def fields_of(
        self, text: str, resources: Resources, details: dict[str, Any], *, what: str
    ) -> Fields:
        """``text``'s fields (``what`` names it in the details: "candidate", "reference r1")."""
        try:
            found = await review_fields(text, resources.generator(PREPROCESSOR_ROLE))
        except ReplyError as exc:
            details["calls"]["preprocessor"] += exc.calls
            raise
        details["calls"]["preprocessor"] += found.calls
        if found.hit_limit:
            note_limits(details, {f"sections of the {what}": STRUCTURE_SETTINGS.max_new_tokens})
        return found

    async def candidate_fields(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> Fields:
        if not item.candidate.strip():
            details.setdefault("flags", []).append("empty_candidate")
            raise Unscored("empty candidate: there is no review to read")
        found = await self.fields_of(item.candidate, resources, details, what="candidate")
        details["candidate_layout"] = found.parsed.layout
        details["candidate_structured_by_llm"] = found.structured_by_llm
        if found.structured_by_llm:
            details["structured_by"] = resources.generator(PREPROCESSOR_ROLE).identity
        if found.parsed.issues:
            details["candidate_parse_issues"] = list(found.parsed.issues)
        return found

    async def points_of(
        self,
        section: str,
        text: str | None,
        resources: Resources,
        details: dict[str, Any],
        *,
        what: str = "candidate",
    ) -> Points:
        try:
            found = await extract_points(section, text, resources.generator(PREPROCESSOR_ROLE))
        except ReplyError as exc:
            details["calls"]["preprocessor"] += exc.calls
            raise
        details["calls"]["preprocessor"] += found.calls
        if found.hit_limit:
            note_limits(
                details, {f"{section} points of the {what}": POINTS_SETTINGS.max_new_tokens}
            )
        if found.unread:
            details.setdefault("unread_point_lines", []).extend(found.unread)
        return found

    async def expert_points(
        self, item: Item, section: str, resources: Resources, details: dict[str, Any]
    ) -> dict[str, Points]:
        """Reference id -> its points in ``section``; empty references are left out with their
        reason in ``details['experts_left_out']``."""
        out: dict[str, Points] = {}
        left_out = details.setdefault("experts_left_out", {})
        for review in item.references:
            if not review.text.strip():
                left_out[review.id] = "empty reference text"
                continue
            what = f"reference {review.id}"
            fields = await self.fields_of(review.text, resources, details, what=what)
            out[review.id] = await self.points_of(
                section, fields.fields[section], resources, details, what=what
            )
        return out

    async def field_points(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[Points, dict[str, Points]]:
        """The candidate's points in this metric's field and the experts' (only those with a
        point); no expert with a point is :class:`Unscored`. Both are recorded in details."""
        section = self.field or ""
        fields = await self.candidate_fields(item, resources, details)
        experts = await self.expert_points(item, section, resources, details)
        experts = {k: v for k, v in experts.items() if v.points}
        if not experts:
            raise Unscored(f"no expert review has a point in its {section}")
        candidate = await self.points_of(section, fields.fields[section], resources, details)
        if not candidate.points:
            details.setdefault("flags", []).append("empty_candidate_field")
        details["candidate_points"] = [p.as_dict() for p in candidate.points]
        details["expert_points"] = {k: [p.as_dict() for p in v.points] for k, v in experts.items()}
        return candidate, experts
