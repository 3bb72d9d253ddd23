"""Harness-independent core of gem-tasks: MI estimators (GEM, GEM-raw, GEM-S), evaluation-LM
backends, preprocessing, the on-disk cache, records and statistics.

Nothing here imports inspect_ai, so lm-evaluation-harness or plain Python can use it.
"""

from scorers.backends import load_evaluation_lm, parse_spec
from scorers.backends.base import EvaluationLM, GenerationSettings, LogprobResult, ScoringRequest
from scorers.cache import CachedEvaluationLM, ScoreCache
from scorers.gem import NOT_AVAILABLE, Outcome, Reference, pmi_terms, score_review
from scorers.preprocess import Preprocessed, preprocess_reviews, summarise_assw
from scorers.records import PaperRecord, RecordError, ReviewRecord, load_records, split_reviews

__all__ = [
    "NOT_AVAILABLE",
    "CachedEvaluationLM",
    "EvaluationLM",
    "GenerationSettings",
    "LogprobResult",
    "Outcome",
    "PaperRecord",
    "Preprocessed",
    "RecordError",
    "Reference",
    "ReviewRecord",
    "ScoreCache",
    "ScoringRequest",
    "load_evaluation_lm",
    "load_records",
    "parse_spec",
    "pmi_terms",
    "preprocess_reviews",
    "score_review",
    "split_reviews",
    "summarise_assw",
]
