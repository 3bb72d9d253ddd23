"""Score signatures: everything that makes two scores comparable, the way sacrebleu's metrics
carry theirs.

Each family extends :class:`Signature` with its own fields and builds it from what the metric
actually used (models and their precision, the templates it rendered, its options). Two scores may
be ranked together only when their :meth:`Signature.key` is equal: the metric, its family's
comparability ``version`` (bumped only when the numbers change) and the family's fields. The
package version is recorded for information and is not part of the key, so a release that fixes
a plot does not split the leaderboard.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import prompts

__all__ = [
    "INFORMATIONAL",
    "OMIT_WHEN_EMPTY",
    "Signature",
    "comparable",
    "package_version",
    "prompt_hashes",
]

INFORMATIONAL = ("id", "package_version")
"""Signature fields that are recorded but do not decide comparability."""

OMIT_WHEN_EMPTY = "omit_when_empty"
"""Metadata of a signature field that is left out of the signature while it is empty
(``field(default="", metadata={OMIT_WHEN_EMPTY: True})``)."""


def package_version() -> str:
    """Installed version of gem-tasks (``0+unknown`` when run from an uninstalled tree)."""
    try:
        return version("gem-tasks")
    except PackageNotFoundError:
        return "0+unknown"


def prompt_hashes(templates: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Template name -> short hash of its source, for the templates a metric rendered."""
    return {name: prompts.template_hash(name) for name in sorted(set(templates))}


def comparable(signature: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a signature dict that decide comparability (without ``id`` and the package
    version); works for signatures of any age, including logs written before families had
    typed signatures."""
    return {k: v for k, v in signature.items() if k not in INFORMATIONAL}


@dataclass(frozen=True)
class Signature:
    """Common fields of every family's signature."""

    metric: str
    family: str
    version: int
    """The family's comparability version."""
    package_version: str = field(default_factory=package_version)

    def _fields(self) -> dict[str, Any]:
        """Every field, less those marked ``omit_when_empty`` that are empty: a field that
        applies to some of a family's scores only (so adding it splits no other score's
        group)."""
        out = asdict(self)
        for f in fields(self):
            if f.metadata.get(OMIT_WHEN_EMPTY) and not out[f.name]:
                del out[f.name]
        return out

    def key(self) -> dict[str, Any]:
        """The fields that decide comparability."""
        return comparable(self._fields())

    @property
    def id(self) -> str:
        """Short hash of :meth:`key`: equal ids, comparable scores."""
        canonical = json.dumps(self.key(), sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def as_dict(self) -> dict[str, Any]:
        """Every field, plus ``id`` (what is logged)."""
        return {**self._fields(), "id": self.id}
