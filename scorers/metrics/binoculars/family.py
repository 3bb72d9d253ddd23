"""AI-likelihood of a review by Binoculars (Beyond Rating §4.6 and App. E; the detector of Hans
et al., 2024, as coded in ahans30/Binoculars): how human-like the review's text looks to a pair of
language models. No reference review and no evaluation LM are used.

The review is split with :func:`scorers.text.structured.parse_review` into its text fields
(summary, strengths, weaknesses, questions); each present, non-empty field gets its Binoculars
score ``B = log PPL / log X-PPL`` (:mod:`scorers.metrics.binoculars.detector`: the performer's
perplexity over the observer-performer cross-perplexity, first 512 tokens, no special tokens,
each field's pair of numbers kept in the score cache), and the value is
the arithmetic mean over the scored fields (Beyond Rating averages the four; a review missing a
field averages those it has, and says how many). A review whose strengths and weaknesses come as
one combined section scores that section as ``strengths_and_weaknesses``; a review with no
recognisable field scores its whole text as one field, ``text``. Typical values are 0.7-1.3;
higher is more human-like. ``ai_generated`` (in the details) is ``value < threshold``, and the
corpus-level AI rate (:func:`ai_rate`) is the share of scored reviews flagged so (per review on
the mean, the spec's choice 17); per-field flags are in ``per_field_ai``.

Options (Args):
    observer: observer model spec: ``embedded`` (the packaged SmolLM2-135M-Instruct), a local
        transformers folder or a hub id (default ``tiiuae/falcon-7b``, the reference's).
    performer: performer model spec, same forms (default ``tiiuae/falcon-7b-instruct``); it must
        share the observer's tokenizer.
    threshold: below it a review counts as AI-generated (default 0.9015310749276843, the
        reference's accuracy-mode threshold, which Beyond Rating uses). It was selected for the
        Falcon-7B pair in bfloat16 with ``ppl_model="performer"``; with any other pair the
        signature and details say ``threshold_calibrated: false`` and the flag is only indicative.
    ppl_model: whose perplexity is the numerator: ``performer`` (the reference code, which set the
        threshold) or ``observer`` (the wording of both papers; ahans30/Binoculars issue #27).
    max_tokens: tokens of each field that are read (default 512, the reference's); a longer field
        is cut and listed in ``truncated_fields``.
    dtype: ``auto`` (float32 on a CPU, bfloat16 on a GPU), ``float32``, ``bfloat16`` or
        ``float16``; it is part of each model's identity in the signature.
    device: ``auto`` (a GPU when there is one), or a torch device such as ``cuda:0``.

Cost: two full-vocabulary forwards of up to 512 tokens per field, i.e. up to eight per review.
The Falcon-7B pair needs about 28 GB of GPU memory in bfloat16; it is not for a CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from scorers.errors import MetricError, Unscored
from scorers.lm.loading import DTYPES
from scorers.lm.threads import run_blocking
from scorers.metrics.binoculars.detector import (
    ACCURACY_THRESHOLD,
    DEFAULT_OBSERVER,
    DEFAULT_PERFORMER,
    is_calibrated,
    load_binoculars,
)
from scorers.options import MetricOptions, option
from scorers.registry import Metric, MetricSpec
from scorers.resources import Resources
from scorers.signature import Signature
from scorers.types import Item, Result

BINOCULARS_VERSION = 1
TEXT_FIELDS = ("summary", "strengths", "weaknesses", "questions")
WHOLE_TEXT = "text"
COMBINED = "strengths_and_weaknesses"


@dataclass(frozen=True)
class BinocularsSignature(Signature):
    observer: str = ""
    """Observer identity with its precision (``...:bfloat16``)."""
    performer: str = ""
    ppl_model: str = "performer"
    max_tokens: int = 512
    threshold: float = ACCURACY_THRESHOLD
    threshold_calibrated: bool = False
    aggregation: str = "mean of the present fields (summary, strengths, weaknesses, questions)"


def review_fields(text: str) -> tuple[dict[str, str], dict[str, str], str]:
    """The texts to score, the fields left out (name -> why) and the layout used: the present,
    non-empty text fields of ``text``; its combined strengths-and-weaknesses section when it has
    no separate ones; or, with no recognisable field at all, the whole text as ``text``."""
    from scorers.text.structured import parse_review

    parsed = parse_review(text)
    fields: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name in TEXT_FIELDS:
        body = parsed.fields.get(name)
        if body is None:
            skipped[name] = "missing"
        elif not body.strip():
            skipped[name] = "empty"
        else:
            fields[name] = body.strip()
    combined = (parsed.combined or "").strip()
    if combined and "strengths" not in fields and "weaknesses" not in fields:
        fields[COMBINED] = combined
    if fields:
        return fields, skipped, "fields"
    if any(parsed.fields.get(name) is not None for name in TEXT_FIELDS):
        return {}, skipped, "fields"  # the fields are there, all empty
    return {WHOLE_TEXT: text.strip()}, {}, "whole_text"


def ai_rate(rows: list[dict[str, Any]]) -> float:
    """Share of reviews flagged AI-generated, over the ``Result.metadata()`` dicts of scored
    reviews (NaN for none). Unscored rows (``unscored_reason``) are left out; a scored row
    without ``ai_generated`` is an error, not a silent zero."""
    flags = []
    for row in rows:
        if row.get("unscored_reason"):
            continue
        if not isinstance(row.get("ai_generated"), bool):
            raise MetricError("ai_rate: a scored row has no boolean 'ai_generated' detail")
        flags.append(row["ai_generated"])
    return sum(flags) / len(flags) if flags else math.nan


@dataclass(frozen=True)
class BinocularsOptions(MetricOptions):
    observer: str = option(DEFAULT_OBSERVER, "the observer model (a Hub id, a folder, embedded)")
    performer: str = option(DEFAULT_PERFORMER, "the performer model (the same forms)")
    threshold: float = option(
        ACCURACY_THRESHOLD,
        "a review scoring below it is flagged AI-generated (the default is the Binoculars "
        "authors' accuracy threshold for their falcon-7b pair)",
    )
    ppl_model: Literal["performer", "observer"] = option(
        "performer", "whose log-perplexity is the score's numerator"
    )
    max_tokens: int = option(512, "tokens of each text field scored", minimum=2)
    dtype: str = option("auto", f"the models' dtype: auto or one of {', '.join(DTYPES)}")
    device: str = option("auto", "where the models run: auto, cpu, cuda, cuda:N")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not math.isfinite(self.threshold):
            raise MetricError(f"option 'threshold' must be finite, got {self.threshold}")
        for name in ("observer", "performer"):
            if not getattr(self, name).strip():
                raise MetricError(f"option {name!r} must be a model spec, got an empty string")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise MetricError(
                f"option 'dtype' must be 'auto' or one of {DTYPES}, got {self.dtype!r}"
            )


class BinocularsMetric(Metric):
    options: BinocularsOptions

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        o = self.options
        self.calibrated = is_calibrated(o.observer, o.performer, o.threshold, o.ppl_model)

    def check_settings(self) -> None:
        """The observer and performer models can be found (the embedded model, a local folder,
        or a Hub id that the local cache or the Hub has)."""
        from scorers.lm.backends import in_process_model
        from scorers.lm.embedded import EmbeddedModelMissing, embedded_gguf_path
        from scorers.lm.locate import locate_model

        for role in ("observer", "performer"):
            name = in_process_model(getattr(self.options, role), what=f"{self.name} {role}")
            if name == "embedded":
                try:
                    embedded_gguf_path()
                except EmbeddedModelMissing as exc:
                    raise MetricError(f"{self.name} {role}: {exc}") from None
            else:
                locate_model(name, what=f"{self.name}'s {role} model")

    async def compute(self, item: Item, resources: Resources) -> Result:
        o = self.options
        pair = await run_blocking(
            load_binoculars,
            o.observer,
            o.performer,
            dtype=o.dtype,
            device=o.device,
            max_tokens=o.max_tokens,
            ppl_model=o.ppl_model,
        )
        threshold = o.threshold
        signature = BinocularsSignature(
            metric=self.name,
            family="binoculars",
            version=BINOCULARS_VERSION,
            observer=pair.observer_identity,
            performer=pair.performer_identity,
            ppl_model=o.ppl_model,
            max_tokens=o.max_tokens,
            threshold=threshold,
            threshold_calibrated=self.calibrated,
        )
        base: dict[str, Any] = {"threshold": threshold, "threshold_calibrated": self.calibrated}
        if not item.candidate.strip():
            raise Unscored(
                "empty candidate: no text to score",
                explanation="unscored: the candidate review is empty",
                details={**base, "flags": ["empty_candidate"]},
                signature=signature,
            )
        fields, skipped, layout = review_fields(item.candidate)
        counts = await run_blocking(pair.token_counts, list(fields.values()))
        for (name, _), count in zip(list(fields.items()), counts):
            if count < 2:
                skipped[name] = f"{count} token(s): Binoculars needs at least 2"
                del fields[name]
        base.update(layout=layout, skipped_fields=skipped)
        if not fields:
            why = "; ".join(f"{k}: {v}" for k, v in skipped.items())
            raise Unscored(
                f"no text field to score ({why})",
                explanation=f"unscored: no text field to score ({why})",
                details=base,
                signature=signature,
            )
        scores = await run_blocking(pair.score_cached, list(fields.values()), resources.cache)
        bad = {n: s for n, s in zip(fields, scores) if not math.isfinite(s.score)}
        if bad:
            why = "; ".join(f"{n}: ppl {s.ppl}, x_ppl {s.x_ppl}" for n, s in bad.items())
            raise Unscored(
                f"non-finite Binoculars score ({why})",
                explanation=f"unscored: non-finite Binoculars score ({why})",
                details=base,
                signature=signature,
            )
        return self._result(list(fields), scores, base, skipped, layout, signature)

    def _result(
        self,
        fields: list[str],
        scores: list[Any],
        base: dict[str, Any],
        skipped: dict[str, str],
        layout: str,
        signature: BinocularsSignature,
    ) -> Result:
        """The review's Binoculars score (the mean over its scored fields), its verdict at the
        threshold, one term per field and the explanation."""
        threshold = self.options.threshold
        calibration = "calibrated" if self.calibrated else "uncalibrated"
        per_field = {name: s.score for name, s in zip(fields, scores)}
        value = math.fsum(per_field.values()) / len(per_field)
        ai_generated = value < threshold
        terms = [
            {
                "field": name,
                "score": s.score,
                "ppl": s.ppl,
                "x_ppl": s.x_ppl,
                "tokens": s.tokens,
                "truncated": s.truncated,
                "ai_generated": s.score < threshold,
            }
            for name, s in zip(fields, scores)
        ]
        details = {
            **base,
            "ai_generated": ai_generated,
            "per_field": per_field,
            "per_field_ai": {name: b < threshold for name, b in per_field.items()},
            "n_fields": len(per_field),
            "fields": terms,
            "truncated_fields": [t["field"] for t in terms if t["truncated"]],
            "whole_text": layout == "whole_text",
        }
        verdict = "AI-generated" if ai_generated else "human-like"
        lines = [
            f"Binoculars score {value:.4f}: mean over {len(per_field)} field(s); {verdict} at "
            f"threshold {threshold:.4f} ({calibration} for this pair)"
        ]
        lines += [
            f"- {t['field']}: B = {t['score']:.4f} (ppl {t['ppl']:.4f}, x_ppl {t['x_ppl']:.4f}, "
            f"{t['tokens']} tokens{', cut' if t['truncated'] else ''})"
            for t in terms
        ]
        lines += [f"- {k} left out: {v}" for k, v in skipped.items()]
        if layout == "whole_text":
            lines.append("- no summary/strengths/weaknesses/questions field: whole text scored")
        return Result(
            value=value, explanation="\n".join(lines), details=details, signature=signature
        )
