"""A task's dataset as loaded once, and the one way its records become documents and prompts.

Every harness (the Inspect tasks, the lm-evaluation-harness task) loads its data with
:meth:`TaskData.load` (one domain per dataset, the dataset's identity), lets its scoring plan
refuse what the metrics cannot serve (:meth:`scorers.plan.ScoringPlan.refuse_data`), takes the
negatives the plan resolved (:meth:`TaskData.with_negatives`) and builds each sample from
:meth:`TaskData.document` and :func:`report_prompt`; so the same record gives the same document
and the same prompt in every task and harness.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import prompts
from scorers.data.paper_docs import negatives_metadata, paper_document
from scorers.data.records import PaperRecord, RecordError, dataset_identity
from scorers.data.sources.summaries import load_judgment_records
from scorers.domains import template

__all__ = ["DomainNotTaken", "TaskData", "report_prompt"]


class DomainNotTaken(RecordError):
    """A dataset of a domain the task does not take (:attr:`domain`: the dataset's)."""

    def __init__(self, message: str, *, domain: str) -> None:
        super().__init__(message)
        self.domain = domain


@dataclass(frozen=True)
class TaskData:
    """A task's dataset: where it came from, its records (one domain), the dataset's identity
    (:func:`scorers.data.records.dataset_identity`) and how many reports of other inputs each
    input's document carries as negative references (resolved by the task's scoring plan)."""

    source: str
    records: list[PaperRecord]
    identity: dict[str, Any]
    negatives: int = 0

    @classmethod
    def load(cls, source: str | Path, *, domains: frozenset[str] | None = None) -> TaskData:
        """The records of ``source`` (canonical records, generic judgment items, or the
        SummEval, SPACE and LFQA-E files as published) after the checks every task makes: one
        domain per dataset (one of ``domains`` when given). No negatives yet.

        Raises:
            RecordError: malformed input or several domains.
            DomainNotTaken: a domain not among ``domains``.
        """
        records = load_judgment_records(source)
        found = sorted({r.domain for r in records})
        if len(found) != 1:
            raise RecordError(f"{source}: one domain per dataset, found {', '.join(found)}")
        if domains is not None and found[0] not in domains:
            raise DomainNotTaken(
                f"{source}: {found[0]} data; this task takes {', '.join(sorted(domains))}",
                domain=found[0],
            )
        identity = dataset_identity(records, name=Path(str(source)).stem)
        return cls(source=str(source), records=records, identity=identity)

    @property
    def domain(self) -> str:
        """The dataset's one domain."""
        return self.records[0].domain

    def with_negatives(self, negatives: int) -> TaskData:
        """The same data with ``negatives`` negative references per input."""
        return replace(self, negatives=negatives)

    def drawn_negatives(self, record: PaperRecord, *, seed: int) -> list[dict[str, Any]]:
        """The negative references of ``record``: reports of other records, drawn with
        ``seed`` (:func:`scorers.data.paper_docs.negatives_metadata`)."""
        if not self.negatives:
            return []
        return negatives_metadata(record, self.records, k=self.negatives, seed=seed)

    def document(
        self,
        record: PaperRecord,
        *,
        references: int,
        seed: int,
        max_paper_tokens: int,
        hold_out: bool = True,
        held_out: str | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """A record's input text and document (:func:`scorers.data.paper_docs.paper_document`):
        its references split with ``seed`` (a held-out report unless ``hold_out`` is false; the
        report ``held_out`` names when given), its negatives, the input cut at
        ``max_paper_tokens`` and the dataset's identity."""
        return paper_document(
            record,
            references=references,
            seed=seed,
            max_paper_tokens=max_paper_tokens,
            negatives=self.drawn_negatives(record, seed=seed),
            dataset=self.identity,
            hold_out=hold_out,
            held_out=held_out,
        )


def report_prompt(
    record: PaperRecord, text: str, *, system_prompt: str = "review/system"
) -> tuple[str, str]:
    """The system and user turns asking for a report of ``record``'s input ``text``, in the
    wording of the record's domain (:func:`scorers.domains.template`; for peer review the GEM
    paper's App. C.3 prompt). The input is a template variable, never template source."""
    return (
        prompts.render(template(record.domain, system_prompt)),
        prompts.render(template(record.domain, "review/user"), paper=text),
    )
