"""Auto-PRE (Chen et al., "Auto-PRE: An Automatic and Cost-Efficient Peer-Review Framework for
Language Generation Evaluation", AAAI 2026; spec autopre_gppm.md Part A): candidate LLM judges
take three label-free exams (consistency, pertinence, self-confidence); those passing all three
form a panel whose votes are weighted by (P_c + P_p + 1) / 3.

- :mod:`.core`: parsers, exam scores, the strict mean threshold, selection, weights, the
  weighted vote (pure Python);
- :mod:`.judging`: asking a judge (a generator and a prompt variant) on pairs in both orders,
  and its confidence (first-token probability for the local evaluation LM, else verbal);
- :mod:`.exams`: exam items from paper records and running the exams.

Metric ``autopre_panel``: the panel compares the candidate review with the held-out human review
of the same paper, each judge in both orders; the value is the weighted vote for the candidate
(1 win, 0.5 tie, 0 loss; its mean over papers is the win rate against the human). Judges are
model roles (option ``judges``: ``role[@variant]``, comma-separated; an unbound role falls back
to the evaluation LM), weighted by the option ``weights`` (judge -> weight, e.g. the panel
weights of an ``autopre_exam`` run) or uniformly when none are given (stated in the details).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scorers.lm.base import RETRY_TEMPERATURE
from scorers.lm.generation import LocalGenerator
from scorers.metrics.autopre.core import Vote, weighted_vote
from scorers.metrics.autopre.exams import paper_context
from scorers.metrics.autopre.judging import (
    VARIANTS,
    Judge,
    Pair,
    ask_pairs,
    parse_judge_entries,
    template_of,
)
from scorers.registry import Metric, register_metric_class
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Result

__all__ = ["AUTOPRE_VERSION", "JUDGE_ROLES", "AutoPrePanel", "parse_judges"]

AUTOPRE_VERSION = 2
JUDGE_ROLES = ("judge", "judge_2", "judge_3", "judge_4", "judge_5")
"""Model roles a panel may use (``--model-role judge_2=anthropic/...``)."""


def parse_judges(spec: str | list[str] | tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``role[@variant]`` entries -> (name, role, variant); unknown roles or variants and
    duplicates are ``ValueError``."""

    def known_role(role: str) -> None:
        if role not in JUDGE_ROLES:
            raise ValueError(f"unknown judge role {role!r}; panel roles are {JUDGE_ROLES}")

    return parse_judge_entries(spec, check=known_role)


@dataclass(frozen=True)
class PanelSignature(Signature):
    judges: dict[str, str] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    decoding: str = ""
    prompts: dict[str, str] = field(default_factory=dict)


class AutoPrePanel(Metric):
    def __init__(self, spec, **options: Any) -> None:
        super().__init__(spec, **options)
        if self.options["local_answers"] not in ("generate", "forced"):
            raise ValueError("autopre_panel: local_answers must be 'generate' or 'forced'")

    def _weights(self, names: list[str]) -> tuple[dict[str, float], str]:
        given = self.options["weights"]
        if not given:
            return {n: 1.0 for n in names}, "uniform (no exam weights given)"
        missing = sorted(set(names) - set(given))
        if missing:
            raise ValueError(f"autopre_panel: no weight for judge(s) {missing}; given {given}")
        return {n: float(given[n]) for n in names}, "exam weights (P_c + P_p + 1) / 3"

    async def ascore(self, item: Item, resources: Resources) -> Result:
        parsed = parse_judges(self.options["judges"])
        names = [name for name, _, _ in parsed]
        weights, weighting = self._weights(names)
        forced = self.options["local_answers"] == "forced"
        judges = []
        for name, role, variant in parsed:
            generator = resources.generator(role)
            local = isinstance(generator, LocalGenerator) and variant in VARIANTS
            judges.append(Judge(name, generator, variant, forced=forced and local))
        signature = PanelSignature(
            metric=self.name,
            family="autopre",
            version=AUTOPRE_VERSION,
            judges={j.name: j.generator.identity for j in judges},
            weights=weights,
            decoding="local judges: forced choice of the first token one/two"
            if forced
            else "temperature 0, max 8 new tokens, both orders, "
            f"one retry at temperature {RETRY_TEMPERATURE:g} (seed 1)",
            prompts=prompt_hashes(tuple(template_of(v) for _, _, v in parsed)),
        )
        held_out = item.held_out
        problem = None
        if not item.candidate.strip():
            problem = "empty candidate: nothing for the panel to compare"
        elif held_out is None or not held_out.text.strip():
            problem = "no held-out human review to compare the candidate with"
        if problem:
            return Result(
                value=None, reason=problem, explanation=f"unscored: {problem}", signature=signature
            )
        pair = Pair(
            id=item.paper.id,
            paper=paper_context(item.paper.title, item.paper.abstract),
            a=item.candidate.strip(),
            b=held_out.text.strip(),
        )
        votes, per_judge, calls = [], {}, 0
        for judge in judges:
            judged = await ask_pairs(judge, [pair])
            calls += judged.calls
            labels, replies = judged.labels[0], judged.replies[0]
            votes += [Vote(judge.name, weights[judge.name], o, labels[o]) for o in (0, 1)]
            per_judge[judge.name] = {
                "weight": weights[judge.name],
                "labels": list(labels),
                "replies": list(replies),
                "calls": judged.calls,
                "generator": judge.generator.identity,
            }
        verdict, tally = weighted_vote(votes)
        details: dict[str, Any] = {
            "judges": per_judge,
            "weighting": weighting,
            "tally": tally,
            "judge_calls": calls,
            "orders": "order 0 = (candidate, human), order 1 = (human, candidate)",
            "candidate_is_held_out": item.candidate.strip() == held_out.text.strip(),
        }
        lines = [
            f"{name} (w={v['weight']:.3g}): order 0 {v['labels'][0]}, order 1 {v['labels'][1]}"
            for name, v in per_judge.items()
        ]
        if verdict is None:
            reason = "no judge's answer could be read: " + "; ".join(
                f"{n}: {v['replies']!r}" for n, v in per_judge.items()
            )
            return Result(
                value=None,
                reason=reason,
                explanation="unscored: " + reason,
                details=details,
                signature=signature,
            )
        outcome = {1.0: "candidate wins", 0.5: "tie", 0.0: "human wins"}[verdict]
        return Result(
            value=verdict,
            explanation=(
                f"Auto-PRE panel vs the held-out human review: {outcome} (weight "
                f"{tally['weight_for_a']:.3g} vs {tally['weight_for_b']:.3g}; "
                f"{tally['votes_unparsed']} unread vote(s) left out); labels -1 = review one, "
                "+1 = review two\n" + "\n".join(lines)
            ),
            details=details,
            signature=signature,
        )


register_metric_class(
    AutoPrePanel,
    name="autopre_panel",
    display_name="Auto-PRE panel win rate vs human",
    family="autopre",
    higher_is_better=True,
    needs=frozenset({"generator", "abstract"}),
    version=AUTOPRE_VERSION,
    defaults={"judges": "judge", "weights": None, "local_answers": "generate"},
    roles=JUDGE_ROLES,
    description="a weighted panel of LLM judges compares the review with the held-out human "
    "review, both orders (1 win, 0.5 tie, 0 loss)",
    source="Auto-PRE (Chen et al., AAAI 2026), §Methodology; spec autopre_gppm.md A.6, A.10",
)
