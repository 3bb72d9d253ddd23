"""Where a model's weights come from, or why they cannot, told before anything is loaded.

A local folder that does not exist, a model the local Hugging Face cache lacks while the Hub is
offline (``HF_HUB_OFFLINE``), a name the Hub does not have (or gates), and a Hub that does not
answer are four different messages, each a :class:`~scorers.errors.SettingError` of one line.
The settings check (:mod:`scorers.lm.preflight`) and the loaders (:mod:`scorers.lm.loading`,
the vLLM backends' tokenizers) both call :func:`locate_model`, so a plain-Python caller gets the
message a run's set-up gets, before transformers' own retries.
"""

from __future__ import annotations

from pathlib import Path

from scorers.errors import SettingError

__all__ = ["HUB_TIMEOUT_S", "locate_model"]

HUB_TIMEOUT_S = 10.0
"""How long the Hugging Face Hub may take to say whether it has a model."""


def _is_hub_id(name: str) -> bool:
    """A Hub id is ``name`` or ``owner/name``: no leading ``/``, ``.`` or ``~``, one slash."""
    return not name.startswith(("/", ".", "~")) and name.count("/") <= 1 and "\\" not in name


def locate_model(name: str, *, revision: str | None = None, what: str = "the evaluation LM") -> str:
    """``"local"`` (a folder), ``"cache"`` (the local Hugging Face cache has it) or ``"hub"`` (the
    Hub has it and will be asked for it); otherwise a :class:`SettingError` saying which of
    these went wrong.

    Args:
        name: a local folder or a Hub id.
        revision: the Hub revision asked for, if any.
        what: the model's role in messages.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file() and not any(path.glob("*.gguf")):
            raise SettingError(f"{what}: {path} is a folder without a model (no config.json)")
        return "local"
    if path.exists():
        raise SettingError(f"{what}: {path} is a file, not a model folder")
    if not _is_hub_id(name):
        raise SettingError(f"{what}: no folder {name!r} (a local model folder must exist)")

    from huggingface_hub import constants, try_to_load_from_cache

    cached = try_to_load_from_cache(name, "config.json", revision=revision)
    if isinstance(cached, str):
        return "cache"
    if constants.HF_HUB_OFFLINE:
        raise SettingError(
            f"{what}: {name!r} is not in the local Hugging Face cache and the Hub is offline "
            "(HF_HUB_OFFLINE is set): download it first (hf download "
            f"{name}) or give a local folder"
        )
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        HfApi().model_info(name, revision=revision, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        raise SettingError(
            f"{what}: {name!r} is gated on the Hugging Face Hub: accept its terms on its page and "
            "log in (hf auth login, or HF_TOKEN)"
        ) from None
    except RevisionNotFoundError:
        raise SettingError(f"{what}: the Hub's {name!r} has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise SettingError(
            f"{what}: the Hugging Face Hub has no model {name!r} (check the name; a private "
            "model needs hf auth login)"
        ) from None
    except HfHubHTTPError as exc:
        raise SettingError(f"{what}: the Hugging Face Hub answered {exc}".splitlines()[0]) from None
    except Exception as exc:  # no answer at all: DNS, refused, timed out, a proxy
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise SettingError(
            f"{what}: the Hugging Face Hub does not answer ({reason}) and {name!r} is not in the "
            "local cache: check the network, or download the model where the Hub answers and "
            "give its folder"
        ) from None
    return "hub"
