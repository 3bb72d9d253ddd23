"""Auto-PRE (Chen et al., "Auto-PRE: An Automatic and Cost-Efficient Peer-Review Framework for
Language Generation Evaluation", AAAI 2026, §Methodology): candidate LLM judges
take three label-free exams (consistency, pertinence, self-confidence); those passing all three
form a panel whose votes are weighted by (P_c + P_p + 1) / 3.

- :mod:`.core`: parsers, exam scores, the strict mean threshold, selection, weights, the
  weighted vote (pure Python);
- :mod:`.judging`: asking a judge (a generator and a prompt variant) on pairs in both orders,
  and its confidence (first-token probability for the local evaluation LM, else verbal);
- :mod:`.exams`: exam items from paper records and running the exams.

- :mod:`.panel`: the panels as metrics.

Metric ``autopre_panel``: Auto-PRE's panel (the judges of a qualification that passed all three
exams, weighted by (P_c + P_p + P_s) / 3; option ``qualification``, required) compares the
candidate review with the held-out human review of the same paper, each judge in both orders;
the value is the weighted vote for the candidate (1 win, 0.5 tie, 0 loss; its mean over papers
is the win rate against the human). ``autopre_panel_unqualified``: the same vote by judges chosen
by hand (model roles, option ``judges``; weights given or uniform): not Auto-PRE, named so.
"""

from __future__ import annotations

from scorers.metrics.autopre.panel import (
    AUTOPRE_VERSION,
    JUDGE_ROLES,
    AutoPrePanel,
    AutoPrePanelOptions,
    UnqualifiedPanel,
    UnqualifiedPanelOptions,
    load_qualification,
    parse_judges,
)
from scorers.registry import register_metric_class

__all__ = [
    "AUTOPRE_VERSION",
    "JUDGE_ROLES",
    "AutoPrePanel",
    "AutoPrePanelOptions",
    "UnqualifiedPanel",
    "UnqualifiedPanelOptions",
    "load_qualification",
    "parse_judges",
]

_SOURCE = "Auto-PRE (Chen et al., AAAI 2026), §Methodology (the weighted vote, the exams)"

register_metric_class(
    AutoPrePanel,
    name="autopre_panel",
    display_name="Auto-PRE panel win rate vs human",
    family="autopre",
    higher_is_better=True,
    needs=frozenset({"generator", "abstract"}),
    version=AUTOPRE_VERSION,
    empty_candidate="unscored",
    options=AutoPrePanelOptions,
    description="Auto-PRE's panel (the judges that passed the three exams of an autopre_exam "
    "run, weighted by (P_c + P_p + P_s) / 3) compares the review with the held-out human "
    "review, both orders (1 win, 0.5 tie, 0 loss)",
    source=_SOURCE,
)
register_metric_class(
    UnqualifiedPanel,
    name="autopre_panel_unqualified",
    display_name="Unqualified judge panel win rate vs human (not Auto-PRE)",
    family="autopre",
    higher_is_better=True,
    needs=frozenset({"generator", "abstract"}),
    version=AUTOPRE_VERSION,
    empty_candidate="unscored",
    options=UnqualifiedPanelOptions,
    roles=JUDGE_ROLES,
    description="judges chosen by hand (model roles), weighted as given or uniformly, compare "
    "the review with the held-out human review, both orders: Auto-PRE's vote without its "
    "qualification",
    source=f"{_SOURCE} (the vote only)",
)
