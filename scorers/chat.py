"""Chat rendering for teacher-forced scoring: which token ids are context and which are target.

The reference implementation (GEM authors' notebook) tokenises the whole chat once, with the
assistant turn forced to the target, and sums the log-probabilities of the assistant content plus
the end-of-turn token. :func:`build_scoring_request` reproduces exactly that split for any chat
template, using character offsets of one tokenisation of the full rendered chat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scorers.backends.base import ChatMessage, ScoringRequest

__all__ = ["ChatRenderError", "build_scoring_request", "generation_prompt_ids"]


class ChatRenderError(ValueError):
    """The chat template cannot be split cleanly into context and assistant target."""


def _render(tokenizer: Any, messages: Sequence[ChatMessage], *, generation_prompt: bool) -> str:
    if getattr(tokenizer, "chat_template", None) is None:
        raise ChatRenderError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', tokenizer)!r} has no chat template"
        )
    return tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=generation_prompt
    )


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]]


def build_scoring_request(
    tokenizer: Any, messages: Sequence[ChatMessage], target: str
) -> ScoringRequest:
    """Token ids of ``messages`` followed by an assistant turn forced to ``target``.

    The target span is exactly the assistant content plus the end-of-turn token (whatever the
    template renders after the content up to and including its first token, e.g. ``<|eot_id|>``
    or ``<|im_end|>``); tokens the template adds after that (a trailing newline) are not part of
    the request. ``target`` must be non-empty and is used as given (callers strip it: some
    templates trim message content).
    """
    if not target.strip():
        raise ChatRenderError("the target text is empty")
    prefix = _render(tokenizer, messages, generation_prompt=True)
    full = _render(
        tokenizer, [*messages, {"role": "assistant", "content": target}], generation_prompt=False
    )
    if not full.startswith(prefix):
        raise ChatRenderError("the chat template does not render the generation prompt as a prefix")
    content_start = len(prefix)
    content_end = content_start + len(target)
    if full[content_start:content_end] != target:
        raise ChatRenderError(
            "the chat template altered the assistant content (e.g. trimmed it); "
            "pass a stripped target"
        )
    ids, offsets = _encode(tokenizer, full)
    start = next((i for i, (s, _) in enumerate(offsets) if s >= content_start), None)
    if start is None or start == 0 or offsets[start - 1][1] > content_start:
        raise ChatRenderError("a token straddles the start of the assistant content")
    eot = next((i for i, (s, e) in enumerate(offsets) if s >= content_end and e > s), None)
    if eot is None:
        raise ChatRenderError("the chat template renders no end-of-turn token after the content")
    if offsets[eot - 1][1] > content_end:
        raise ChatRenderError("a token straddles the end of the assistant content")
    return ScoringRequest(context_ids=tuple(ids[:start]), target_ids=tuple(ids[start : eot + 1]))


def generation_prompt_ids(tokenizer: Any, messages: Sequence[ChatMessage]) -> list[int]:
    """Token ids of ``messages`` rendered with the generation prompt (the assistant turn opened)."""
    ids, _ = _encode(tokenizer, _render(tokenizer, messages, generation_prompt=True))
    return ids
