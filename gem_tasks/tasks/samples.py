"""Canonical paper records -> Inspect samples for review generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

import prompts
from scorers.data.candidates import MEMBERS, distinct_candidates, mean_ratings
from scorers.data.paper_docs import (
    CHARS_PER_TOKEN,
    negatives_metadata,
    paper_document,
    paper_input,
)
from scorers.data.records import PaperRecord, RecordError, dataset_identity
from scorers.data.sources.summaries import load_judgment_records
from scorers.domains import template

__all__ = [
    "ANSWER",
    "candidate_samples",
    "distinct_candidate_samples",
    "CHARS_PER_TOKEN",
    "DEMO_DATASET",
    "SPACE_DEMO",
    "SUMMEVAL_DEMO",
    "document_sample",
    "human_answer",
    "negatives_metadata",
    "paper_dataset",
    "paper_input",
    "paper_samples",
    "record_document",
    "record_to_sample",
    "stored_answer",
    "task_records",
]

ANSWER = "answer"
"""Sample-metadata key of a stored answer (the held-out human report, an existing system's
report): ``{"source", "id", "text"}``, which :func:`stored_answer` answers with."""

DEMO_DATASET = Path(__file__).parent / "data" / "demo_iclr.jsonl"
"""Ten fictional papers with three reviews each, written for the project (not real reviews)."""
SUMMEVAL_DEMO = Path(__file__).parent / "data" / "summeval_demo.jsonl"
"""Three articles of SummEval (MIT, LICENSE.summeval beside it) as its shared file has them."""
SPACE_DEMO = Path(__file__).parent / "data" / "space_demo.jsonl"
"""Two hotels of SPACE's development set (MIT, LICENSE.space beside it)."""


@solver
def stored_answer() -> Solver:
    """Answer with the report stored in the sample (:data:`ANSWER`: the held-out human review of
    the human baseline, an existing system's report) instead of calling a model: the one solver
    of every task's stored candidates. A sample without one is an error."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        answer = (state.metadata or {}).get(ANSWER)
        if not answer or not isinstance(answer.get("text"), str):
            raise ValueError(f"sample {state.sample_id!r} stores no answer to give")
        state.output = ModelOutput.from_content(model=answer["source"], content=answer["text"])
        state.messages.append(state.output.message)
        state.completed = True
        return state

    return solve


def human_answer(document: Mapping[str, Any]) -> dict[str, Any]:
    """The stored answer of the human baseline: the document's held-out review."""
    held = document.get("held_out")
    if not held:
        raise RecordError(f"{document.get('paper_id')}: no held-out review to answer with")
    return {"source": "human", "id": held["id"], "text": held["text"]}


def record_to_sample(
    paper: PaperRecord,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: list[dict[str, Any]] | None = None,
    system_prompt: str = "review/system",
    dataset: Mapping[str, Any] | None = None,
    human: bool = False,
) -> Sample:
    """One sample per paper: a review prompt (``system_prompt``; default the GEM paper's C.3)
    as input, the held-out human review as target, and the reference reviews, abstract and ASSW
    in the metadata for the scorers (:func:`document_sample` of its document)."""
    text, document = paper_document(
        paper,
        references=references,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        negatives=negatives,
        dataset=dataset,
    )
    answer = human_answer(document) if human else None
    return document_sample(paper, text, document, answer=answer, system_prompt=system_prompt)


def document_sample(
    paper: PaperRecord,
    text: str,
    document: Mapping[str, Any],
    *,
    sample_id: str | None = None,
    answer: Mapping[str, Any] | None = None,
    system_prompt: str = "review/system",
) -> Sample:
    """The one sample builder: the domain's report prompt (``system_prompt``, the user turn with
    the input ``text``) as input, the held-out report (if any) as target, the document as
    metadata with the stored ``answer`` (:data:`ANSWER`) and its human ratings when given."""
    metadata = dict(document)
    if answer:
        metadata[ANSWER] = dict(answer)
        if answer.get("ratings"):
            metadata["ratings"] = dict(answer["ratings"])
    return Sample(
        id=sample_id or paper.id,
        input=[
            ChatMessageSystem(content=prompts.render(template(paper.domain, system_prompt))),
            ChatMessageUser(
                content=prompts.render(template(paper.domain, "review/user"), paper=text)
            ),
        ],
        target=(document.get("held_out") or {}).get("text") or "",
        metadata=metadata,
    )


def task_records(
    source: str | Path, *, domains: frozenset[str] | None = None
) -> tuple[list[PaperRecord], dict[str, Any]]:
    """The one loader of every task: the records of ``source`` (canonical records, generic
    judgment items, or the SummEval, SPACE and LFQA-E files as published) and the dataset's
    identity (:func:`scorers.data.records.dataset_identity`), after the checks every task makes:
    one domain per dataset (one of ``domains`` when given). What the task's metrics need of the
    data is its scoring plan's to refuse (:func:`gem_tasks.scoring.adapter.task_plan`).

    Raises:
        RecordError: malformed input, several domains or one the task does not take.
    """
    records = load_judgment_records(source)
    found = sorted({r.domain for r in records})
    if len(found) != 1:
        raise RecordError(f"{source}: one domain per dataset, found {', '.join(found)}")
    if domains is not None and found[0] not in domains:
        raise RecordError(
            f"{source}: {found[0]} data; this task takes {', '.join(sorted(domains))} "
            "(summaries and answers: gem_tasks/summeval, gem_tasks/space, gem_tasks/judgments)"
        )
    return records, dataset_identity(records, name=Path(str(source)).stem)


def paper_dataset(
    records: list[PaperRecord],
    identity: Mapping[str, Any] | None,
    *,
    location: str,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: int = 0,
    system_prompt: str = "review/system",
    human: bool = False,
) -> MemoryDataset:
    """Samples for every record (:func:`paper_samples`), each with ``negatives`` reviews of other
    papers, as a dataset named after ``location``. A dataset too small for the negatives raises
    ``RecordError``. With ``human``, each sample stores its held-out review as the answer (the
    human baseline, :func:`stored_answer`)."""
    samples = paper_samples(
        records,
        identity,
        references=references,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        negatives=negatives,
        system_prompt=system_prompt,
        human=human,
    )
    return MemoryDataset(samples, name=Path(location).stem, location=location)


def paper_samples(
    records: list[PaperRecord],
    identity: Mapping[str, Any] | None,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: int = 0,
    system_prompt: str = "review/system",
    human: bool = False,
) -> list[Sample]:
    """One sample per record with its held-out report (:func:`record_to_sample`) and
    ``negatives`` reports of other records."""
    return [
        record_to_sample(
            r,
            references=references,
            seed=seed,
            max_paper_tokens=max_paper_tokens,
            negatives=negatives_metadata(r, records, k=negatives, seed=seed) if negatives else [],
            system_prompt=system_prompt,
            dataset=identity,
            human=human,
        )
        for r in records
    ]


def record_document(
    record: PaperRecord,
    records: Sequence[PaperRecord],
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: int = 0,
    dataset: Mapping[str, Any] | None = None,
    hold_out: bool = True,
) -> tuple[str, dict[str, Any]]:
    """A record's input text and document (:func:`scorers.data.paper_docs.paper_document`) with
    ``negatives`` reports of other records of ``records`` drawn for it."""
    drawn = negatives_metadata(record, list(records), k=negatives, seed=seed) if negatives else []
    return paper_document(
        record,
        references=references,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        negatives=drawn,
        dataset=dataset,
        hold_out=hold_out,
    )


def candidate_samples(
    record: PaperRecord, text: str, document: Mapping[str, Any], *, wanted: str | None = None
) -> list[Sample]:
    """One sample per existing candidate of ``record`` (``wanted``: only that one, which must
    exist), its report stored as the answer with its human ratings (``system:<id>``)."""
    found = [c for c in record.candidates if wanted in (None, c.id)]
    if wanted is not None and not found:
        known = ", ".join(c.id for c in record.candidates) or "none"
        raise RecordError(f"{record.id}: no candidate {wanted!r} (it has: {known})")
    return [
        document_sample(
            record,
            text,
            document,
            sample_id=record.id if wanted else f"{record.id}/{entry.id}",
            answer={
                "source": f"system:{entry.id}",
                "id": entry.id,
                "text": entry.text,
                "ratings": dict(entry.ratings),
            },
        )
        for entry in found
    ]


def distinct_candidate_samples(
    records: Sequence[PaperRecord], documents: Mapping[str, tuple[str, Mapping[str, Any]]]
) -> list[Sample]:
    """One sample per distinct candidate text of an entity (:func:`scorers.data.candidates.
    distinct_candidates`): a text several records share (LFQA-E's answers, one record per
    compared pair) is scored once. The sample is that text where it first appears, with the
    document of that record (``documents``: record id -> its input text and document), its
    ratings the mean of every place's (:func:`~scorers.data.candidates.mean_ratings`), and every
    place it appears in its metadata (:data:`~scorers.data.candidates.MEMBERS`)."""
    samples = []
    for found in distinct_candidates(records):
        text, document = documents[found.record.id]
        sample = document_sample(
            found.record,
            text,
            document,
            sample_id=f"{found.record.id}/{found.candidate.id}",
            answer={
                "source": f"system:{found.candidate.id}",
                "id": found.candidate.id,
                "text": found.candidate.text,
                "ratings": mean_ratings(found.members),
            },
        )
        sample.metadata[MEMBERS] = [dict(m) for m in found.members]
        samples.append(sample)
    return samples
