"""Reading a model's yes/no answer: the one tolerant reader and the one decoding setting for every
yes/no question the project asks (the Scoring Rules binary critic, "same item?" and "does the
candidate support this statement?"; Beyond Rating's match and question judges).

The other kinds of answer have one reader each, beside the prompt that asks for them: the 7-point
judgment in :mod:`scorers.oracle`, Auto-PRE's one/two in :mod:`scorers.metrics.autopre.core`,
LMExaminer's 0-10 tag in :mod:`scorers.metrics.judge`, Beyond Rating's point lists in
:mod:`scorers.metrics.beyond.structure`. Every reader raises
:class:`~scorers.lm.asking.ReplyError` with the reply quoted on a reply it cannot read, and
:func:`scorers.lm.asking.ask_many` asks such a question again once.
"""

from __future__ import annotations

import json
import re

from scorers.lm.asking import ReplyError
from scorers.lm.base import GenerationSettings

__all__ = ["YES_NO_SETTINGS", "parse_yes_no"]

YES_NO_SETTINGS = GenerationSettings(max_new_tokens=16, temperature=0.0)
"""A yes/no verdict: temperature 0, and room for "Answer: **Yes**" or a short JSON object
(only the first answer word is read)."""

_LEAD = r"[\s\"'*_`>#:\-\[(]*"
_YES_NO = re.compile(
    rf"^{_LEAD}(?:(?:final\s+)?(?:answer|verdict|output|response){_LEAD}[:=]?{_LEAD})?"
    r"(yes|no)\b",
    re.IGNORECASE,
)
_JSON_WORDS = {"yes": True, "true": True, "no": False, "false": False}


def parse_yes_no(reply: str) -> bool:
    """True for a reply that answers yes, False for no. Read: a reply that *begins* with the word
    (any case; after quotes, markdown, punctuation or an "Answer:"/"Verdict:" label), or a JSON
    object (fenced or not) holding one boolean, or one "yes"/"no" string. "Not sure", "None",
    "Yesterday" and refusals are not answers: :class:`~scorers.lm.asking.ReplyError`."""
    text = (reply or "").strip()
    match = _YES_NO.match(text)
    if match:
        return match.group(1).lower() == "yes"
    fenced = text.strip("`").strip()
    fenced = fenced[4:].strip() if fenced.lower().startswith("json") else fenced
    try:
        data = json.loads(fenced)
    except ValueError:
        data = None
    if isinstance(data, dict):
        found = [
            _JSON_WORDS[v.lower()] if isinstance(v, str) else v
            for v in data.values()
            if isinstance(v, bool) or (isinstance(v, str) and v.lower() in _JSON_WORDS)
        ]
        if len(found) == 1:
            return bool(found[0])
    raise ReplyError("the reply is not Yes or No", reply=text)
