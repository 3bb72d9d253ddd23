"""Access to the OpenReview API through ``openreview-py``: which API serves a venue, which
invitation ids list its submissions, and a guest client.

ICLR 2018-2023 and NeurIPS 2021-2022 live on API v1 (``https://api.openreview.net``: submissions
under ``<venue>/-/Blind_Submission``, reviews in ``note.details["directReplies"]``); ICLR 2024
and NeurIPS 2023 onwards on API v2 (``https://api2.openreview.net``: submissions under
``<venue>/-/Submission``, content values wrapped as ``{"value": ...}``, reviews in
``note.details["replies"]``).

The builder needs only two methods of a client, :class:`NotesClient`; tests pass any object
that has them, serving recorded responses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from gem_data.openreview.errors import OpenReviewError

__all__ = [
    "API_URLS",
    "NotesClient",
    "api_version_for",
    "details_key",
    "make_client",
    "note_to_dict",
    "submission_invitations",
    "venue_conference",
    "venue_label",
    "venue_year",
]

API_URLS = {1: "https://api.openreview.net", 2: "https://api2.openreview.net"}
LAST_V1_YEAR = 2023
LAST_V1_YEAR_BY_CONFERENCE = {"iclr": 2023, "neurips": 2022}
"""The last year each conference's reviews are served by API v1 (others: :data:`LAST_V1_YEAR`)."""

_NOTE_FIELDS = (
    "id",
    "number",
    "forum",
    "replyto",
    "invitation",
    "invitations",
    "content",
    "details",
    "cdate",
    "pdate",
    "tcdate",
    "ddate",
    "license",
    "signatures",
)


@runtime_checkable
class NotesClient(Protocol):
    """The part of ``openreview.Client`` / ``openreview.api.OpenReviewClient`` the builder uses."""

    def get_all_notes(self, **kwargs: Any) -> list[Any]:
        """Every note matching the filters (``invitation=``, ``details=``), paged by the client."""
        ...

    def get_pdf(self, id: str) -> bytes:
        """The PDF attached to note ``id``."""
        ...


def venue_year(venue: str) -> int:
    """The year in a venue id such as ``ICLR.cc/2025/Conference``; ``ValueError`` without one."""
    match = re.search(r"(?:^|/)((?:19|20)\d\d)(?:/|$)", venue)
    if not match:
        raise ValueError(f"venue id {venue!r} has no year: expected e.g. 'ICLR.cc/2025/Conference'")
    return int(match.group(1))


def venue_conference(venue: str) -> str:
    """The conference of a venue id: ``NeurIPS.cc/2023/Conference`` -> ``NeurIPS``."""
    return venue.strip("/").split("/")[0].removesuffix(".cc")


def venue_label(venue: str) -> str:
    """A readable venue name: ``ICLR.cc/2025/Conference`` -> ``ICLR 2025``."""
    name = venue_conference(venue)
    try:
        return f"{name} {venue_year(venue)}"
    except ValueError:
        return venue


def api_version_for(venue: str) -> int:
    """1 for ICLR 2018-2023 and NeurIPS 2021-2022 (API v1), 2 after (API v2)."""
    last_v1 = LAST_V1_YEAR_BY_CONFERENCE.get(venue_conference(venue).lower(), LAST_V1_YEAR)
    return 1 if venue_year(venue) <= last_v1 else 2


def submission_invitations(venue: str, api_version: int) -> list[str]:
    """Invitation ids to try, in order, for the venue's submissions."""
    venue = venue.rstrip("/")
    if api_version == 1:
        return [f"{venue}/-/Blind_Submission", f"{venue}/-/Submission"]
    return [f"{venue}/-/Submission"]


def details_key(api_version: int) -> str:
    """The ``details=`` value that makes the listing carry each submission's reviews."""
    return "directReplies" if api_version == 1 else "replies"


def make_client(api_version: int, *, baseurl: str | None = None) -> NotesClient:
    """A guest ``openreview-py`` client for API v1 or v2 (``baseurl`` overrides the public URL).

    No credentials are passed; ``openreview-py`` logs in only when ``OPENREVIEW_USERNAME`` and
    ``OPENREVIEW_PASSWORD`` are set in the environment. Public reviews need no account.
    """
    if api_version not in API_URLS:
        raise ValueError(f"API version must be 1 or 2, got {api_version!r}")
    try:
        import openreview
        import openreview.api
    except ImportError as exc:
        raise OpenReviewError(
            "building a dataset from OpenReview needs openreview-py: pip install openreview-py"
        ) from exc
    url = baseurl or API_URLS[api_version]
    try:
        if api_version == 1:
            return openreview.Client(baseurl=url)
        return openreview.api.OpenReviewClient(baseurl=url)
    except OSError as exc:  # a login from environment credentials can fail to connect
        raise OpenReviewError(f"cannot reach {url} ({type(exc).__name__}: {exc})") from exc


def note_to_dict(note: Any) -> dict[str, Any]:
    """A JSON-serialisable dict of an ``openreview`` Note (v1 or v2) or of a dict of one.

    Keeps the fields the builder reads (id, number, invitation(s), content, details, dates,
    licence); ``Note.to_json()`` would drop ``details``, where the reviews are.
    """
    if isinstance(note, Mapping):
        source: Mapping[str, Any] = note
    else:
        source = {name: getattr(note, name) for name in _NOTE_FIELDS if hasattr(note, name)}
    return {name: source[name] for name in _NOTE_FIELDS if source.get(name) is not None}
