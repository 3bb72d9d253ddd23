"""Harness-independent core of gem-tasks: the metric registry and its families (GEM, GEM-raw,
GEM-S, ...), evaluation-LM backends, the one cache, records, validation and statistics.

Nothing here imports inspect_ai, so lm-evaluation-harness or plain Python can use it::

    from scorers import Item, Paper, Resources, Review, get_metric

    item = Item(paper=Paper(id="p1", abstract="..."), candidate="...",
                references=(Review(id="r1", text="..."),))
    result = get_metric("gem_s").score(item, Resources(evaluation_lm="embedded"))
    print(result.value, result.explanation, result.signature.as_dict())
"""

from scorers.data.records import PaperRecord, RecordError, ReviewRecord, load_records, split_reviews
from scorers.errors import (
    EvaluationLMError,
    GemTasksError,
    MetricError,
    UnknownMetricError,
    Unscored,
)
from scorers.lm import load_evaluation_lm, parse_spec
from scorers.lm.base import EvaluationLM, GenerationSettings, LogprobResult, ScoringRequest
from scorers.lm.cache import CachedEvaluationLM, ScoreCache
from scorers.lm.generation import CachedGenerator, LocalGenerator, TextGenerator
from scorers.lm.threads import run_sync
from scorers.per_reference import PerReferenceMetric
from scorers.pmi import NOT_AVAILABLE, Outcome, Reference, pmi_terms, score_review
from scorers.registry import Metric, MetricSpec, get_metric, list_metrics, register_metric
from scorers.resources import Resources
from scorers.signature import Signature
from scorers.text.judgments import Preprocessed, rewrite_reviews, summarise_assw
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Paper, Result, Review

__all__ = [
    "CANDIDATE_IS_JUDGMENTS",
    "NOT_AVAILABLE",
    "CachedEvaluationLM",
    "CachedGenerator",
    "EvaluationLM",
    "EvaluationLMError",
    "GemTasksError",
    "GenerationSettings",
    "Item",
    "LocalGenerator",
    "LogprobResult",
    "Metric",
    "MetricError",
    "MetricSpec",
    "Outcome",
    "Paper",
    "PerReferenceMetric",
    "PaperRecord",
    "Preprocessed",
    "RecordError",
    "Reference",
    "Resources",
    "Result",
    "Review",
    "ReviewRecord",
    "ScoreCache",
    "ScoringRequest",
    "Signature",
    "TextGenerator",
    "UnknownMetricError",
    "Unscored",
    "get_metric",
    "list_metrics",
    "load_evaluation_lm",
    "load_records",
    "parse_spec",
    "pmi_terms",
    "rewrite_reviews",
    "run_sync",
    "register_metric",
    "score_review",
    "split_reviews",
    "summarise_assw",
]
