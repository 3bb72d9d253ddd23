"""Inspect entry point (group ``inspect_ai``): everything registered as ``gem_tasks/<name>``:
the tasks, the model provider, and one scorer (and one paired scorer) per core metric."""

from gem_tasks.model_api import smollm2
from gem_tasks.scoring.adapter import SCORERS
from gem_tasks.scoring.paired import PAIRED_SCORERS
from gem_tasks.tasks.autopre_exam import autopre_exam
from gem_tasks.tasks.correlation import correlation
from gem_tasks.tasks.iclr import iclr
from gem_tasks.tasks.judgments import judgments
from gem_tasks.tasks.review_quality import review_quality
from gem_tasks.tasks.robustness import perturb_review, robustness
from gem_tasks.tasks.samples import stored_answer
from gem_tasks.tasks.space import space
from gem_tasks.tasks.summeval import summeval

__all__ = [
    "autopre_exam",
    "correlation",
    "iclr",
    "judgments",
    "perturb_review",
    "review_quality",
    "robustness",
    "smollm2",
    "space",
    "stored_answer",
    "summeval",
]

globals().update(SCORERS)
globals().update({f"{name}_paired": factory for name, factory in PAIRED_SCORERS.items()})
__all__ += [*SCORERS, *(f"{name}_paired" for name in PAIRED_SCORERS)]
