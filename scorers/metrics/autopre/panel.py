"""Panels of LLM judges comparing the candidate review with the held-out human review.

- ``autopre_panel`` is Auto-PRE's panel: the judges that passed all three qualification exams,
  each vote weighted by (P_c + P_p + P_s) / 3 (P_s = 1 for every member), read from a
  qualification (:func:`load_qualification`: the ``qualification_from_log`` table of an
  ``autopre_exam`` run, as a mapping or a JSON file; the Inspect scorer also takes the exam's
  log itself). A judge is answered by the model the exam qualified: the evaluation LM for
  ``scorer_lm`` judges (its identity must be the one the exam recorded), otherwise the harness
  model of that name; in the answer mode it was qualified in (``forced`` or generated). A
  qualification with an empty panel, or one listing a judge that did not pass, is refused; so is
  one computed on another dataset than the one scored (Auto-PRE qualifies judges per dataset:
  the qualification records its dataset's content hash, a task's scoring plan gives the scored
  one: :meth:`AutoPrePanel.check_dataset`), unless option ``accept_other_dataset`` says to use
  it anyway, which the signature then records.
- ``autopre_panel_unqualified`` is a panel of judges chosen by hand (model roles ``judge``,
  ``judge_2``, ...; option ``judges``), weighted by option ``weights`` or uniformly: *not*
  Auto-PRE, and named so, with its own signature.

Both compare in both orders and take the weighted vote (1 win, 0.5 tie, 0 loss for the
candidate; the mean over papers is the win rate against the human). The judges are told the
paper's title and abstract: a paper without a real abstract is unscored with the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scorers.errors import MetricError, Unscored
from scorers.lm.base import RETRY_TEMPERATURE
from scorers.lm.generation import LocalGenerator, TextGenerator
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
from scorers.options import MetricOptions, option
from scorers.registries import Registry
from scorers.registry import Metric, MetricSpec
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Result

__all__ = [
    "AUTOPRE_VERSION",
    "EVALUATION_LM_JUDGE",
    "JUDGE_ROLES",
    "AutoPrePanel",
    "PanelQualification",
    "PanelSignature",
    "UnqualifiedPanel",
    "dataset_check",
    "load_qualification",
    "parse_judges",
    "register_qualification_reader",
]

AUTOPRE_VERSION = 2
JUDGE_ROLES = ("judge", "judge_2", "judge_3", "judge_4", "judge_5")
"""Model roles an unqualified panel may use (``--model-role judge_2=anthropic/...``)."""
EVALUATION_LM_JUDGE = "scorer_lm"
"""The exam's name for the evaluation LM as a judge (first-token probabilities available)."""
EXAMS = ("consistency", "pertinence", "self_confidence")


def parse_judges(spec: str | list[str] | tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``role[@variant]`` entries -> (name, role, variant); unknown roles or variants and
    duplicates are ``ValueError``."""

    def known_role(role: str) -> None:
        if role not in JUDGE_ROLES:
            raise ValueError(f"unknown judge role {role!r}; panel roles are {JUDGE_ROLES}")

    return parse_judge_entries(spec, check=known_role)


@dataclass(frozen=True)
class PanelQualification:
    """What a panel takes from a qualification: its members (``model@variant`` as the exam
    named them), their weights, the generator identity each was qualified with, whether it
    answered forced, and where the qualification came from (a digest of its content)."""

    panel: tuple[str, ...]
    weights: dict[str, float]
    generators: dict[str, str]
    forced: dict[str, bool]
    source: str
    digest: str
    dataset: dict[str, Any] | None = None
    """The dataset the exams were drawn from (name, records, sha256 of its content); None for
    a qualification that does not record it."""


QualificationReader = Callable[[Path], Mapping[str, Any] | None]
_READERS: Registry[QualificationReader] = Registry("qualification reader")
"""The readers of qualification files other than the JSON table, by the kind of file they
read, tried in registration order."""


def register_qualification_reader(name: str, reader: QualificationReader) -> None:
    """Let :func:`load_qualification` read another kind of file, ``name``: ``reader(path)``
    returns the qualification table, or None for a file it does not read. The Inspect layer
    registers one for ``autopre_exam`` logs (the core reads no harness's log format itself).
    Registering the same reader under its name again does nothing; another under a taken name
    is an error."""
    if _READERS.get(name) is not reader:
        _READERS.register(name, reader)


def _qualification_table(value: Mapping[str, Any] | str | Path) -> tuple[Any, str]:
    """The qualification table ``value`` is or names (a file a registered reader reads, else a
    JSON file), and what to call it in messages."""
    if isinstance(value, str | Path):
        path = Path(value)
        if not path.is_file():
            raise MetricError(f"qualification file {path} does not exist")
        tables = (reader(path) for reader in _READERS.values())
        read = next((table for table in tables if table is not None), None)
        try:
            table = dict(read) if read is not None else json.loads(path.read_text("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MetricError(
                f"{path}: neither a qualification JSON file nor an autopre_exam log ({exc})"
            ) from None
        return table, path.name
    if isinstance(value, Mapping):
        return dict(value), str(value.get("source") or "given table")
    raise MetricError(f"qualification must be a table or a JSON file, got {type(value).__name__}")


def _check_panel_judge(
    judge: str,
    row: Mapping[str, Any] | None,
    weights: Mapping[str, Any],
    generators: Mapping[str, Any],
    *,
    source: str,
) -> None:
    """A :class:`MetricError` unless panel ``judge`` (its exam ``row``) passed all three exams,
    has a positive weight and a recorded generator."""
    if row is None:
        raise MetricError(f"{source}: panel judge {judge!r} has no exam results")
    passed = row.get("passed") or {}
    failed = [exam for exam in EXAMS if not passed.get(exam)]
    if failed:
        raise MetricError(
            f"{source}: panel judge {judge!r} did not pass {', '.join(failed)}: only judges "
            "that passed all three exams are Auto-PRE's panel"
        )
    weight = weights.get(judge)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
        raise MetricError(f"{source}: panel judge {judge!r} has no positive weight")
    if judge not in generators:
        raise MetricError(
            f"{source}: the generator that judge {judge!r} was qualified with is not "
            "recorded (a qualification written before the panel read it): rebuild it from "
            "the exam's log with qualification_from_log"
        )


def load_qualification(value: Mapping[str, Any] | str | Path) -> PanelQualification:
    """A qualification (the table ``qualification_from_log`` returns for an ``autopre_exam``
    log, a JSON file of it, or a file a registered reader reads, such as the exam's Inspect
    log) as the panel reads it.

    Raises:
        MetricError: the file is missing or not a qualification; its panel is empty (no judge
            passed all three exams: the reason is quoted); it lists a judge that did not pass
            an exam or has no weight; it does not record the judges' generators.
    """
    table, source = _qualification_table(value)
    if not isinstance(table, dict) or not isinstance(table.get("judges"), dict):
        raise MetricError(f"{source}: not a qualification (no 'judges' table)")
    panel = list(table.get("panel") or [])
    if not panel:
        why = table.get("reason") or "no candidate passed all three exams"
        raise MetricError(
            f"{source}: the qualification's panel is empty ({why}); Auto-PRE has no judge to "
            "score with. To compare with judges that did not qualify, use the differently "
            "named metric autopre_panel_unqualified"
        )
    weights = dict(table.get("weights") or {})
    generators = dict(table.get("generators") or {})
    forced = {k: bool(v) for k, v in (table.get("forced") or {}).items()}
    for judge in panel:
        _check_panel_judge(judge, table["judges"].get(judge), weights, generators, source=source)
    dataset = table.get("dataset")
    if dataset is not None and not (isinstance(dataset, dict) and dataset.get("sha256")):
        raise MetricError(f"{source}: its dataset {dataset!r:.80} has no content hash")
    canonical = json.dumps(
        {
            "panel": panel,
            "weights": weights,
            "generators": generators,
            "forced": forced,
            "dataset": dataset,
        },
        sort_keys=True,
    )
    return PanelQualification(
        panel=tuple(panel),
        weights={j: float(weights[j]) for j in panel},
        generators={j: str(generators[j]) for j in panel},
        forced={j: forced.get(j, False) for j in panel},
        source=source,
        digest=hashlib.sha256(canonical.encode()).hexdigest()[:12],
        dataset=dict(dataset) if dataset is not None else None,
    )


def _named(dataset: Mapping[str, Any] | None) -> str:
    if dataset is None:
        return "a dataset it does not record"
    digest = str(dataset.get("sha256"))[:12]
    return f"{dataset.get('name')} ({dataset.get('records')} records, sha256 {digest})"


def dataset_check(
    qualification: PanelQualification,
    scored: Mapping[str, Any] | None,
    *,
    accept_other_dataset: bool,
) -> str:
    """What the panel says of the dataset it scores against the one its judges were qualified
    on (Auto-PRE qualifies judges per dataset): ``same dataset``, ``accepted: ...`` when told to
    accept another, or ``not checked: ...`` when the scored dataset was not given.

    Raises:
        MetricError: the datasets differ (or the qualification records none) and
            ``accept_other_dataset`` is false.
    """
    qualified = qualification.dataset
    if scored is None:
        return f"not checked: the scored dataset was not given (qualified on {_named(qualified)})"
    if qualified is not None and qualified.get("sha256") == scored.get("sha256"):
        return "same dataset"
    what = f"qualified on {_named(qualified)}, scoring {_named(scored)}"
    if not accept_other_dataset:
        raise MetricError(
            f"{qualification.source}: the panel's judges were {what}. Auto-PRE qualifies judges "
            "on the dataset they judge: run the exams on this dataset (inspect eval "
            "gem_tasks/autopre_exam -T dataset=...), or pass accept_other_dataset: true in the "
            "panel's options to use this qualification anyway (its signature then says so)"
        )
    return f"accepted: {what}"


@dataclass(frozen=True)
class PanelSignature(Signature):
    judges: dict[str, str] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    qualification: str = ""
    """Where the panel came from: ``<source> (<digest>)``, or that it is unqualified."""
    dataset_check: str = ""
    """Whether the scored dataset is the one the judges were qualified on (:func:`dataset_check`:
    ``same dataset``, ``accepted: ...``, ``not checked: ...``); empty for an unqualified panel."""
    decoding: str = ""
    prompts: dict[str, str] = field(default_factory=dict)


class _Panel(Metric):
    """A weighted panel of judges against the held-out human review (see the module doc)."""

    def _judges(self, resources: Resources) -> tuple[list[Judge], dict[str, float], str, str]:
        """The judges, their weights, how they were weighted, and the qualification."""
        raise NotImplementedError

    checked: str = ""
    """What the panel says of the scored dataset (:func:`dataset_check`)."""

    async def compute(self, item: Item, resources: Resources) -> Result:
        judges, weights, weighting, qualification = self._judges(resources)
        forced = [j.name for j in judges if j.forced]
        signature = PanelSignature(
            metric=self.name,
            family="autopre",
            version=AUTOPRE_VERSION,
            judges={j.name: j.generator.identity for j in judges},
            weights=weights,
            qualification=qualification,
            dataset_check=self.checked,
            decoding=(f"forced first token one/two: {', '.join(forced)}; " if forced else "")
            + "temperature 0, max 8 new tokens, both orders, "
            f"one retry at temperature {RETRY_TEMPERATURE:g} (seed 1)",
            prompts=prompt_hashes(tuple(template_of(j.variant) for j in judges)),
        )
        held_out = item.held_out
        problem = None
        if not item.candidate.strip():
            problem = "empty candidate: nothing for the panel to compare"
        elif held_out is None or not held_out.text.strip():
            problem = "no held-out human review to compare the candidate with"
        elif not item.paper.has_abstract:
            problem = f"the judges are told the paper's abstract, and {item.paper.abstract_problem}"
        if problem:
            raise Unscored(problem, explanation=f"unscored: {problem}", signature=signature)
        assert held_out is not None
        pair = Pair(
            id=item.paper.id,
            paper=paper_context(item.paper.title, item.paper.abstract, item.paper.id),
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
                "forced": judge.forced,
            }
        verdict, tally = weighted_vote(votes)
        details: dict[str, Any] = {
            "judges": per_judge,
            "weighting": weighting,
            "qualification": qualification,
            "tally": tally,
            "judge_calls": calls,
            "orders": "order 0 = (candidate, human), order 1 = (human, candidate)",
            "candidate_is_held_out": item.candidate_is_held_out,
        }
        lines = [
            f"{name} (w={v['weight']:.3g}): order 0 {v['labels'][0]}, order 1 {v['labels'][1]}"
            for name, v in per_judge.items()
        ]
        if verdict is None:
            reason = "no judge's answer could be read: " + "; ".join(
                f"{n}: {v['replies']!r}" for n, v in per_judge.items()
            )
            raise Unscored(
                reason, explanation="unscored: " + reason, details=details, signature=signature
            )
        outcome = {1.0: "candidate wins", 0.5: "tie", 0.0: "human wins"}[verdict]
        return Result(
            value=verdict,
            explanation=(
                f"{self.spec.display_name}: {outcome} (weight {tally['weight_for_a']:.3g} vs "
                f"{tally['weight_for_b']:.3g}; {tally['votes_unparsed']} unread vote(s) left "
                "out); labels -1 = review one, +1 = review two\n" + "\n".join(lines)
            ),
            details=details,
            signature=signature,
        )


@dataclass(frozen=True)
class AutoPrePanelOptions(MetricOptions):
    qualification: str | Path | Mapping[str, Any] | None = option(
        None,
        "the autopre_exam run that qualified the panel: its Inspect log, or the JSON file of "
        "`gem-tasks autopre-qualification <log>` (required)",
    )
    accept_other_dataset: bool = option(
        False, "judge another dataset than the one the exams were drawn from (recorded)"
    )


@dataclass(frozen=True)
class UnqualifiedPanelOptions(MetricOptions):
    judges: str | tuple[str, ...] = option(
        "judge", "the judges, `role[@variant]` each (comma-separated or a list)"
    )
    weights: Mapping[str, float] | None = option(
        None, "each judge's weight by name; uniform when not given"
    )
    local_answers: Literal["generate", "forced"] = option(
        "generate",
        "how a judge served by the evaluation LM answers: `generate` its reply, `forced` the "
        "likelier of the allowed answers",
    )


class AutoPrePanel(_Panel):
    """Auto-PRE's panel: the qualified judges with their exam weights (see the module doc)."""

    options: AutoPrePanelOptions

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        given = self.options.qualification
        if given is None:
            raise MetricError(
                "autopre_panel needs a qualification: run the exams (inspect eval "
                "gem_tasks/autopre_exam ...) and pass their log, or the JSON file of "
                "`gem-tasks autopre-qualification <log>`, as "
                "scorer_options={autopre_panel: {qualification: <path>}}. A panel of judges "
                "that did not take the exams is the metric autopre_panel_unqualified"
            )
        self.qualification = load_qualification(given)
        self.checked = dataset_check(
            self.qualification, None, accept_other_dataset=self.options.accept_other_dataset
        )
        self.entries = parse_judge_entries(list(self.qualification.panel))

    def check_dataset(self, identity: Mapping[str, Any] | None) -> None:
        """The scored dataset is the one the judges were qualified on (:func:`dataset_check`),
        or the options accept another; what was found goes into the signature."""
        self.checked = dataset_check(
            self.qualification,
            identity,
            accept_other_dataset=self.options.accept_other_dataset,
        )

    def models(self) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys(model for _, model, _ in self.entries if model != EVALUATION_LM_JUDGE)
        )

    def _judges(self, resources: Resources) -> tuple[list[Judge], dict[str, float], str, str]:
        q = self.qualification
        judges = []
        for name, model, variant in self.entries:
            generator: TextGenerator = (
                LocalGenerator(resources.lm())
                if model == EVALUATION_LM_JUDGE
                else resources.model(model)
            )
            if generator.identity != q.generators[name]:
                raise MetricError(
                    f"judge {name!r} was qualified as {q.generators[name]!r}, but would answer "
                    f"as {generator.identity!r} here: a panel judges with the models that "
                    "passed the exams (set scorer_lm to the exam's evaluation LM)"
                )
            forced = q.forced[name] and isinstance(generator, LocalGenerator)
            judges.append(Judge(name, generator, variant, forced=forced and variant in VARIANTS))
        return (
            judges,
            dict(q.weights),
            "exam weights (P_c + P_p + P_s) / 3, P_s = 1",
            f"{q.source} ({q.digest})",
        )


class UnqualifiedPanel(_Panel):
    """Judges chosen by hand: not Auto-PRE (see the module doc)."""

    options: UnqualifiedPanelOptions

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.entries = parse_judges(self.options.judges)

    def _judges(self, resources: Resources) -> tuple[list[Judge], dict[str, float], str, str]:
        names = [name for name, _, _ in self.entries]
        given = self.options.weights
        if given:
            missing = sorted(set(names) - set(given))
            if missing:
                raise MetricError(f"{self.name}: no weight for judge(s) {missing}; given {given}")
            weights = {n: float(given[n]) for n in names}
            weighting = "weights given (not from a qualification)"
        else:
            weights, weighting = {n: 1.0 for n in names}, "uniform"
        forced = self.options.local_answers == "forced"
        judges = []
        for name, role, variant in self.entries:
            generator = resources.generator(role)
            local = isinstance(generator, LocalGenerator) and variant in VARIANTS
            judges.append(Judge(name, generator, variant, forced=forced and local))
        return judges, weights, weighting, "none: judges not qualified by Auto-PRE's exams"
