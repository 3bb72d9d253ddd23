"""Meaningless elongation (GEM paper App. D.2.2, Fig. 4; Scoring Rules paper App. A, Table 7):
fixed uninformative sentences open each section of an ICLR 2023 review; the Strengths And
Weaknesses one embeds an LLM's one-line summaries of the review's strengths and weaknesses."""

from __future__ import annotations

from scorers.validation.perturbations.base import (
    Conversations,
    PaperContext,
    Perturbation,
    answer,
    conversation,
)
from scorers.validation.perturbations.segmentation import ICLR_SECTIONS, iclr_section

ELONGATION_FILLERS = {
    "Summary Of The Paper": (
        "This section provides an overview of the key contributions, methodologies, and "
        "findings presented in the paper. It summarizes the main arguments and highlights the "
        "scope and significance of the research conducted. Specifically,"
    ),
    "Strengths And Weaknesses": (
        "In this section, I will discuss the strengths and weaknesses of the paper, focusing on "
        "its contributions to the field, methodological rigor, and areas where improvements "
        "could be made. The aim is to provide constructive feedback that can help enhance the "
        "quality of the work. This paper has several notable strengths, including {strengths}. "
        "However, there are some areas that could be improved, such as {weaknesses}. "
        "Specifically, I discuss the strengths and weaknesses of the paper as following."
    ),
    "Clarity, Quality, Novelty And Reproducibility": (
        "I will evaluate the clarity of the paper's presentation, the quality of the research, "
        "the novelty of the findings, and the reproducibility of the experiments. This "
        "assessment will address whether the research is presented in a clear and coherent "
        "manner, offers new insights, and can be replicated based on the provided information."
    ),
    "Summary Of The Review": (
        "This summary encapsulates the main points of the review, reflecting on the paper's "
        "contributions, strengths, and areas for improvement. It provides a balanced overview "
        "of the paper's impact and offers final recommendations for the authors."
    ),
}
"""The fixed uninformative sentences of meaningless elongation, verbatim from GEM paper
App. D.2.2 (Fig. 4), keyed by section. Each opens its section's content, in the same paragraph as
the first line of it, except the Strengths And Weaknesses one, a paragraph of its own, in which
``{strengths}`` and ``{weaknesses}`` are the LLM's one-line summaries."""


def elongate(text: str, strengths: str, weaknesses: str) -> str:
    """Open each ICLR section's content with its filler sentences (GEM paper App. D.2.2)."""
    lines = text.replace("\r\n", "\n").split("\n")
    starts: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        section = iclr_section(line)
        if section:
            starts.append((i, section))
    if not starts:
        raise ValueError(
            "meaningless elongation needs a review in the ICLR 2023 four-section format; found "
            f"none of the section headers {list(ICLR_SECTIONS)}"
        )
    fillers = {
        section: filler.format(strengths=strengths, weaknesses=weaknesses)
        for section, filler in ELONGATION_FILLERS.items()
    }
    out = lines[: starts[0][0]]
    bounds = [i for i, _ in starts] + [len(lines)]
    for (start, section), end in zip(starts, bounds[1:]):
        content = lines[start + 1 : end]
        body = [i for i, line in enumerate(content) if line.strip()]
        filler = fillers[section]
        if not body:  # an empty section: the filler becomes its content
            is_last = end == len(lines)
            content = ["", filler] + ([] if is_last else [""])
        else:
            first = body[0]
            line = content[first]
            indent = line[: len(line) - len(line.lstrip())]
            if section == "Strengths And Weaknesses":
                content[first:first] = [indent + filler, ""]
            else:
                content[first] = f"{indent}{filler} {line.lstrip()}"
        out.extend([lines[start], *content])
    return "\n".join(out)


def one_line_summary(name: str, text: str) -> str:
    """A summary to embed mid-sentence: one line, without its closing period."""
    summary = " ".join(text.split()).rstrip(".").strip()
    if not summary:
        raise ValueError(f"perturbation {name!r}: the LLM's summary {text!r} is empty")
    return summary


class MeaninglessElongation(Perturbation):
    name = "meaningless_elongation"
    code = "M"
    kind = "manipulation"
    uses_llm = True
    source = "GEM paper App. D.2.2 (§4.3, Fig. 4); Scoring Rules paper App. A, Table 7"
    description = (
        "Fixed uninformative sentences open each ICLR 2023 section; the Strengths And "
        "Weaknesses one embeds LLM one-line summaries of the review's strengths and "
        "weaknesses."
    )

    def requests(self, text: str, *, paper: PaperContext) -> Conversations:
        """``strengths`` and ``weaknesses``: one-line summaries of the review's; the review must
        be in the ICLR 2023 four-section format (checked before any LLM is asked)."""
        elongate(text, "", "")
        return {
            aspect: conversation(
                "perturb/elongation_summary_system",
                "perturb/review_user",
                aspect=aspect,
                review=text,
            )
            for aspect in ("strengths", "weaknesses")
        }

    def apply(self, text, *, other_text, answers, paper) -> str:
        strengths = one_line_summary(self.name, answer(self.name, answers, "strengths"))
        weaknesses = one_line_summary(self.name, answer(self.name, answers, "weaknesses"))
        return elongate(text, strengths, weaknesses)


FIXED_FILLER = (
    "This review provides an overview of the paper's contributions, methodology and findings, "
    "and discusses its strengths and weaknesses. The aim is to give constructive feedback that "
    "can help improve the quality of the work. The assessment considers the clarity of the "
    "presentation, the quality of the research, the novelty of the findings and the "
    "reproducibility of the experiments."
)
"""The fixed, semantically empty paragraph of :class:`ElongationFixed`. Written for this project
(the Scoring Rules paper does not print its filler), from the section-independent parts of the
GEM paper's fillers (:data:`ELONGATION_FILLERS`)."""


DOMAIN_FILLERS = {
    "peer_review": FIXED_FILLER,
    "summarization": (
        "This summary gives an overview of the article and the events it reports. It aims to "
        "convey the main information clearly and concisely, so that a reader can follow what "
        "happened without reading the full text."
    ),
    "opinion_summarization": (
        "This summary gives an overview of what guests say about the hotel. It aims to convey "
        "the opinions they share clearly and concisely, so that a reader can form an impression "
        "without reading every review."
    ),
    "qa": (
        "This answer addresses the question that was asked. It aims to explain the matter "
        "clearly and concisely, so that a reader can follow the reasoning without further "
        "sources."
    ),
}
"""The fixed filler of :class:`ElongationFixed` per domain (peer review: :data:`FIXED_FILLER`;
the others written for this project in the same content-free style)."""


class ElongationFixed(Perturbation):
    name = "elongation_fixed"
    code = "Mf"
    kind = "manipulation"
    source = (
        "Scoring Rules paper App. A, Table 7 (Meaningless Elongation: the same fixed filler "
        "appended to every candidate, any format); filler not verbatim"
    )
    description = (
        "The same fixed, uninformative paragraph appended to the review, whatever its format "
        "(no LLM)."
    )

    domains = frozenset(DOMAIN_FILLERS)

    def apply(self, text, *, other_text, answers, paper) -> str:
        return f"{text.rstrip()}\n\n{DOMAIN_FILLERS[paper.domain]}"
