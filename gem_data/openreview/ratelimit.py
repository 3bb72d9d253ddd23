"""Rate-limit aware retries around OpenReview API calls.

The ``openreview-py`` clients already retry HTTP 429 and 5xx answers a few times inside
``requests`` (honouring ``Retry-After``); when those retries run out they raise
``OpenReviewException`` with the server's error object. :func:`call_with_backoff` adds a second,
slower layer for long builds: it sleeps and retries on rate limits and server errors, honouring a
``Retry-After`` when one is present, and turns connection failures into :class:`Unreachable`.
The sleep function is injectable so tests run instantly.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from gem_data.openreview.errors import RateLimited, Unreachable

__all__ = ["call_with_backoff", "is_rate_limited", "is_server_error", "retry_after_seconds"]

T = TypeVar("T")


def _error_object(exc: BaseException) -> Mapping[str, Any]:
    """The server's error object carried by an ``OpenReviewException`` (its first argument)."""
    for arg in getattr(exc, "args", ()):
        if isinstance(arg, Mapping):
            return arg
    return {}


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    for code in (getattr(response, "status_code", None), getattr(response, "status", None)):
        if isinstance(code, int):
            return code
    error = _error_object(exc)
    for key in ("status", "statusCode"):
        if isinstance(error.get(key), int):
            return int(error[key])
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def is_rate_limited(exc: BaseException) -> bool:
    """True for an HTTP 429 or an OpenReview ``RateLimitError``, whatever the exception type."""
    if _status(exc) == 429:
        return True
    error = _error_object(exc)
    name = str(error.get("name", "")).lower()
    message = str(error.get("message", "") or exc).lower()
    return "ratelimit" in name or "too many requests" in message or "rate limit" in message


def is_server_error(exc: BaseException) -> bool:
    """True for an HTTP 5xx answer (a transient server fault worth retrying)."""
    status = _status(exc)
    return status is not None and 500 <= status < 600


def _parse_retry_after(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return max(0.0, float(value))
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def retry_after_seconds(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``Retry-After`` header, seconds or HTTP date, or a
    ``retryAfter`` field of the error object); ``None`` when it did not say."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        for key in ("Retry-After", "retry-after"):
            value = headers.get(key) if hasattr(headers, "get") else None
            parsed = _parse_retry_after(value)
            if parsed is not None:
                return parsed
    error = _error_object(exc)
    details = error.get("details")
    for source in (error, details if isinstance(details, Mapping) else {}):
        for key in ("retryAfter", "retry_after", "Retry-After"):
            parsed = _parse_retry_after(source.get(key))
            if parsed is not None:
                return parsed
    return None


def call_with_backoff(
    call: Callable[[], T],
    *,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
    max_retries: int = 6,
    base_delay: float = 5.0,
    max_delay: float = 300.0,
) -> T:
    """Return ``call()``, retrying up to ``max_retries`` times on rate limits and 5xx answers.

    Each retry waits the server's ``Retry-After`` when given, else ``base_delay * 2**attempt``
    capped at ``max_delay``. Raises :class:`RateLimited` when the retries run out and
    :class:`Unreachable` at once on a connection failure (an ``OSError`` without an HTTP
    response: no network, DNS, refused); any other exception propagates unchanged. ``what``
    names the request in error messages.
    """
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if is_rate_limited(exc) or is_server_error(exc):
                if attempt >= max_retries:
                    raise RateLimited(
                        f"{what}: still failing after {max_retries} retries "
                        f"({type(exc).__name__}: {exc}); wait and run the same command again, "
                        "finished papers are kept"
                    ) from exc
                delay = retry_after_seconds(exc)
                if delay is None:
                    delay = min(max_delay, base_delay * 2**attempt)
                sleep(delay)
                attempt += 1
                continue
            if isinstance(exc, OSError) and getattr(exc, "response", None) is None:
                raise Unreachable(
                    f"{what}: cannot reach the OpenReview API ({type(exc).__name__}: {exc}); "
                    "check the network connection, then run the same command again"
                ) from exc
            raise
