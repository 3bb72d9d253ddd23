"""Π = LLM oracle, the Scoring Rules family's own questions (Scoring Rules paper §4.4, App. C,
App. D.1): the **binary critic** of the TV f-variational cells, "does the candidate support or
align with this statement" (statement level, App. C Eq. 5) or "do these two reports describe the
same item" (report level, §4.4, TVD-MI); Yes → +½, No → −½. A binary reply must start with yes
or no (the one yes/no reader, :mod:`scorers.lm.answers`). The 7-point likelihood question of the
other oracle cells is shared with the GPPM family and lives in :mod:`scorers.oracle`. Every
question is asked through :func:`scorers.lm.asking.ask_many` (an unreadable reply once more, then
the reference is reported unread: never a default).
"""

from __future__ import annotations

import prompts
from scorers.domains import template
from scorers.lm.answers import parse_yes_no
from scorers.lm.base import ChatMessage

__all__ = ["parse_critic", "same_item_messages", "support_messages"]

# --------------------------------------------------------------------------- conversations


def _conversation(name: str, domain: str | None, **variables: object) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render(template(domain, f"fmi/{name}_system"))},
        {
            "role": "user",
            "content": prompts.render(template(domain, f"fmi/{name}_user"), **variables),
        },
    ]


def support_messages(
    candidate: str, statement: str, *, domain: str | None = None
) -> list[ChatMessage]:
    """App. C Eq. 5: does the candidate support or align with ``statement``? In the wording of
    ``domain`` (:func:`scorers.domains.template`)."""
    return _conversation("support", domain, candidate=candidate, statement=statement)


def same_item_messages(
    candidate: str, reference: str, *, domain: str | None = None
) -> list[ChatMessage]:
    """§4.4 (TVD-MI): do these two reports describe the same item? In the wording of
    ``domain``."""
    return _conversation("same_item", domain, candidate=candidate, reference=reference)


# --------------------------------------------------------------------------- the critic


def parse_critic(reply: str) -> float:
    """The binary critic of a reply (App. C Eq. 5): +½ for yes, −½ for no, read by the one
    yes/no reader (:func:`scorers.lm.answers.parse_yes_no`; an unreadable reply raises
    :class:`~scorers.lm.asking.ReplyError`)."""
    return 0.5 if parse_yes_no(reply) else -0.5
