"""Errors of the OpenReview dataset builder, each saying what went wrong and what to check."""

from __future__ import annotations

from scorers.errors import GemTasksError

__all__ = ["OpenReviewError", "RateLimited", "Unreachable", "VenueNotFound"]


class OpenReviewError(GemTasksError, RuntimeError):
    """The builder cannot go on; the message names the venue, URL or paper concerned."""


class VenueNotFound(OpenReviewError):
    """No submissions under any of the invitation ids tried for a venue."""

    def __init__(self, venue: str, tried: list[str], api_url: str) -> None:
        self.venue = venue
        self.tried = list(tried)
        super().__init__(
            f"no submissions found for venue {venue!r} at {api_url}; invitation ids tried: "
            f"{', '.join(self.tried)}. Check the venue id (e.g. 'ICLR.cc/2025/Conference'); "
            "ICLR 2018-2023 are served by API v1, 2024 onwards by API v2 (--api overrides)."
        )


class Unreachable(OpenReviewError):
    """A request could not reach the OpenReview API (no network, DNS, refused connection)."""


class RateLimited(OpenReviewError):
    """Still rate-limited after every retry."""
