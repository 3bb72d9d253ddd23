"""Inspect models as the core's text generators: a bound model role (``--model-role
judge=openai/gpt-4o``), or any Inspect model, behind the one sqlite cache."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from inspect_ai._util.error import PrerequisiteError
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
    model_roles,
)

from scorers.errors import SettingError
from scorers.lm.base import ChatMessage as PlainMessage
from scorers.lm.base import GenerationSettings, Reply
from scorers.lm.cache import ScoreCache
from scorers.lm.generation import CachedGenerator, TextGenerator

__all__ = [
    "ask_model",
    "model_generator",
    "named_model",
    "role_generators",
    "to_inspect_messages",
]


def named_model(name: str, *, what: str) -> Model:
    """The Inspect model a setting names (a judge, a panel member), resolved now: a name Inspect
    does not recognise is a :class:`~scorers.errors.SettingError` naming ``what`` (Inspect's
    own prerequisite errors, a missing API key among them, pass unchanged)."""
    try:
        return get_model(name)
    except PrerequisiteError:
        raise
    except ValueError as exc:
        raise SettingError(f"{what} {name!r}: {exc}") from None


def to_inspect_messages(messages: Sequence[PlainMessage]) -> list[ChatMessage]:
    kinds = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    return [kinds[m["role"]](content=m["content"]) for m in messages]


async def ask_model(
    model: Model, conversation: Sequence[PlainMessage], config: GenerateConfig, *, what: str
) -> tuple[Reply, ModelOutput]:
    """One conversation put to an Inspect model: the reply (saying whether it stopped at its
    token limit) and the model's output (its usage). The one place the core's conversations
    reach an Inspect model; a failed call raises naming ``what``."""
    output = await model.generate(to_inspect_messages(conversation), config=config)
    if output.error:
        raise RuntimeError(f"{what} failed: {output.error}")
    # "max_tokens": the reply ran to its limit; "model_length": to the model's context
    stop = output.stop_reason if output.choices else None
    known = stop not in (None, "unknown")
    reply = Reply(
        output.completion, hit_limit=stop in ("max_tokens", "model_length") if known else None
    )
    return reply, output


def model_generator(model: Model, cache: ScoreCache, *, what: str = "model") -> TextGenerator:
    """``model`` as a cached generator; a failed call raises naming the model."""

    async def complete(conversation: Sequence[PlainMessage], settings: GenerationSettings) -> Reply:
        config = GenerateConfig(
            temperature=settings.temperature,
            max_tokens=settings.max_new_tokens,
            seed=settings.seed,
        )
        reply, _ = await ask_model(model, conversation, config, what=f"{what} {model}")
        return reply

    return CachedGenerator(f"inspect/{model}", complete, cache)


def role_generators(roles: Iterable[str], cache: ScoreCache) -> dict[str, TextGenerator]:
    """A generator for each of ``roles`` that is bound in this eval (unbound roles are left out:
    the core falls back to the evaluation LM)."""
    bound = model_roles()
    return {
        role: model_generator(get_model(role=role), cache, what=f"{role} model")
        for role in roles
        if role in bound
    }
