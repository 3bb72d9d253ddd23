"""Degradations and manipulations of a candidate review, for validating an evaluation metric.

A good metric scores a *degraded* review (information removed) lower than the original, and does
not score a *manipulated* review (style, length or stance changed, no information added) higher
(GEM paper §4.2-4.3 and App. D; Scoring Rules paper §3 and App. A, Tables 6-7; GPPM paper §6.1),
nor a *gaming* one (the red-team suite of :mod:`scorers.validation.gaming`: what a model under
test could write on purpose to raise its score without a better review).

Each strategy is one :class:`~scorers.validation.perturbations.base.Perturbation` subclass, in
the module of its kind (``deletion``, ``rewriting``, ``elongation``, ``red_team``), and one entry
of :data:`PERTURBATIONS`. Rule-based strategies are deterministic functions of the text.
LLM-based ones are two steps, so that any harness can run the LLM: :func:`llm_requests` gives the
chat conversations to answer (the papers' prompts, rendered from ``prompts/perturb/*.jinja`` with
the texts as variables), and :func:`apply_perturbation` builds the perturbed text from the
answers. :func:`run_perturbation` does both with a :class:`~scorers.lm.generation.TextGenerator`.
How reviews are cut into sentences and sections: :mod:`.segmentation`.
"""

from __future__ import annotations

from collections.abc import Mapping

from scorers.lm.base import ChatMessage, GenerationSettings
from scorers.lm.generation import TextGenerator
from scorers.registries import Registry
from scorers.validation.perturbations import deletion, elongation, red_team, rewriting
from scorers.validation.perturbations.base import (
    PERTURB_SETTINGS,
    PaperContext,
    Perturbation,
    PerturbationReplyError,
)
from scorers.validation.perturbations.deletion import MISSING_SENTENCE
from scorers.validation.perturbations.elongation import ELONGATION_FILLERS
from scorers.validation.perturbations.segmentation import ICLR_SECTIONS

__all__ = [
    "ELONGATION_FILLERS",
    "GAMING",
    "ICLR_SECTIONS",
    "MISSING_SENTENCE",
    "PERTURBATIONS",
    "PERTURB_SETTINGS",
    "PaperContext",
    "Perturbation",
    "PerturbationReplyError",
    "apply_perturbation",
    "llm_requests",
    "run_perturbation",
]

PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")
"""Every strategy by name: the one registry that the robustness task and the report read."""
for _strategy in (
    deletion.SentenceDeletion(),
    deletion.JudgmentDeletion(),
    deletion.RandomReplacement(),
    deletion.DeletionCompletion(),
    rewriting.SurfaceReport(),
    rewriting.UltraConcise(),
    rewriting.OpinionFlip(),
    rewriting.Rephrase(),
    elongation.MeaninglessElongation(),
    rewriting.PositiveShift(),
    rewriting.NegativeShift(),
    rewriting.HedgedShift(),
    red_team.AbstractCopy(),
    red_team.PaperCopy(),
    red_team.UniversalReview(),
    red_team.Shotgun(),
    red_team.Injection(),
    red_team.SelfReference(),
    red_team.OracleInjection(),
    rewriting.StrongShift(),
    rewriting.RephraseReorganize(),
    elongation.ElongationFixed(),
):
    PERTURBATIONS.register(_strategy.name, _strategy)
del _strategy

GAMING = tuple(name for name, strategy in PERTURBATIONS.items() if strategy.kind == "gaming")
"""The red-team strategies (:mod:`scorers.validation.gaming`): each works on raw reviews and on
judgment summaries alike."""


def _check(name: str, text: str) -> Perturbation:
    strategy = PERTURBATIONS[name]  # an unknown name: UnknownNameError, a ValueError
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"perturbation {name!r}: the text to perturb is empty")
    return strategy


def llm_requests(
    name: str, text: str, *, paper: PaperContext | None = None
) -> dict[str, list[ChatMessage]]:
    """Named chat conversations ([{"role":..., "content":...}]) the strategy needs an LLM to
    answer, in the wording of ``paper.domain``; {} for rule-based ones.

    Keys: ``completion`` (deletion_completion: the text with every other sentence replaced by
    "[There is one missing sentence]"), ``report`` (surface_report: written from the item's weak
    context, which ``paper`` must hold: the abstract, the article, the aspect as ``title``, the
    question), ``strengths`` and ``weaknesses`` (meaningless_elongation; the review must be in
    the ICLR 2023 four-section format), ``rewrite`` (every other LLM-based strategy).
    ``paper`` defaults to an empty peer-review :class:`PaperContext`.

    Raises:
        ValueError: an unknown name, an empty text, or a missing weak context.
        DomainError: the strategy has no prompt in ``paper.domain``
            (:func:`scorers.domains.template`).
    """
    return _check(name, text).requests(text, paper=paper or PaperContext())


def apply_perturbation(
    name: str,
    text: str,
    *,
    other_text: str | None = None,
    llm_outputs: Mapping[str, str] | None = None,
    paper: PaperContext | None = None,
) -> str:
    """The perturbed text.

    Rule-based strategies are deterministic. ``random_replacement`` returns ``other_text`` (a
    review of another paper). LLM-based strategies take the LLM's answers to
    ``llm_requests(name, text, ...)`` under the same keys: the answer is the perturbed review,
    stripped of surrounding whitespace (the prompts ask for no wrapper to remove); for
    meaningless elongation the two answers are joined into one line each and lose a closing
    period before being embedded in the fixed sentences. ``other_text`` and ``llm_outputs`` are
    ignored by strategies that do not use them. Gaming strategies (:data:`GAMING`) are built by
    :mod:`scorers.validation.gaming` from ``text`` and ``paper`` (default: an empty
    :class:`PaperContext` at the review level).

    Raises ValueError for an unknown name, an empty text, a missing or empty ``other_text``
    (or one identical to ``text``) for random replacement, a missing LLM answer, or a gaming
    strategy without the paper context it needs; :class:`PerturbationReplyError` (a
    ``ValueError``) when the LLM's answer does not do what was asked: it is empty, or a
    completion still contains "[There is one missing sentence]" or lost one of the sentences
    it was to keep.
    """
    strategy = _check(name, text)
    return strategy.apply(
        text, other_text=other_text, answers=llm_outputs, paper=paper or PaperContext()
    )


async def run_perturbation(
    name: str,
    text: str,
    generator: TextGenerator | None = None,
    *,
    other_text: str | None = None,
    paper: PaperContext | None = None,
    settings: GenerationSettings = PERTURB_SETTINGS,
) -> str:
    """:func:`llm_requests`, one batched ``generator`` call for them (none for rule-based
    strategies), then :func:`apply_perturbation`. From synchronous code:
    ``run_sync(run_perturbation(...))`` (:func:`scorers.lm.threads.run_sync`)."""
    requests = llm_requests(name, text, paper=paper)
    outputs: dict[str, str] = {}
    if requests:
        if generator is None:
            raise ValueError(f"perturbation {name!r} needs an LLM: pass a generator")
        keys = list(requests)
        answers = await generator.generate([requests[k] for k in keys], settings)
        if len(answers) != len(keys):
            raise ValueError(
                f"perturbation {name!r}: {len(keys)} requests but {len(answers)} answers"
            )
        outputs = dict(zip(keys, answers))
    return apply_perturbation(name, text, other_text=other_text, llm_outputs=outputs, paper=paper)
