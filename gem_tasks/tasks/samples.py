"""Canonical paper records -> Inspect samples for review generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from scorers.data.candidates import MEMBERS, distinct_candidates, mean_ratings
from scorers.data.paper_docs import CHARS_PER_TOKEN, negatives_metadata, paper_input
from scorers.data.records import PaperRecord, RecordError
from scorers.data.task_data import TaskData, report_prompt

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
    "paper_input",
    "paper_samples",
    "stored_answer",
    "task_dataset",
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
    system, user = report_prompt(paper, text, system_prompt=system_prompt)
    return Sample(
        id=sample_id or paper.id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=user)],
        target=(document.get("held_out") or {}).get("text") or "",
        metadata=metadata,
    )


def paper_samples(
    data: TaskData,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    system_prompt: str = "review/system",
    human: bool = False,
) -> list[Sample]:
    """One sample per record: the review prompt (``system_prompt``; default the GEM paper's
    C.3) with the record's input, the held-out report as target and the record's
    :meth:`TaskData.document` as metadata. With ``human``, each sample stores its held-out
    report as the answer (the human baseline, :func:`stored_answer`)."""
    samples = []
    for record in data.records:
        text, document = data.document(
            record, references=references, seed=seed, max_paper_tokens=max_paper_tokens
        )
        answer = human_answer(document) if human else None
        samples.append(
            document_sample(record, text, document, answer=answer, system_prompt=system_prompt)
        )
    return samples


def task_dataset(data: TaskData, samples: list[Sample]) -> MemoryDataset:
    """``samples`` as the task's Inspect dataset, named after the data's source."""
    return MemoryDataset(samples, name=Path(data.source).stem, location=data.source)


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
