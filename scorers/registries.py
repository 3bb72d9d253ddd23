"""The one shape of every registry of named things: metrics, evaluation-LM backends,
perturbation strategies, baseline rules, domains, datasets.

A :class:`Registry` is a read-only mapping from a name to its entry, filled by
:meth:`Registry.register` (a name or alias registered twice is an error), with aliases that
resolve to their entry's name, and one message for a name it does not hold: ``unknown <kind>
'x' (did you mean 'y'?); known: a, b`` followed by the registry's hint (how to list or add
more). Looking up an unknown name raises the registry's error class with that message, so each
caller keeps the error type its users catch (a :class:`~scorers.errors.SettingError` by
default, which is also a ``KeyError`` for mapping code).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from scorers.errors import SettingError, did_you_mean

__all__ = ["Registry", "UnknownNameError"]

T = TypeVar("T")


class UnknownNameError(SettingError, KeyError):
    """A registry holds nothing under that name (nor under an alias of that name)."""

    def __str__(self) -> str:  # KeyError quotes its message; say it plainly
        return str(self.args[0]) if self.args else ""


class Registry(Mapping[str, T], Generic[T]):
    """Entries of one ``kind`` by name, in registration order.

    Args:
        kind: what an entry is, in the words of the unknown-name message (``"perturbation"``).
        error: the exception class an unknown name raises (called with the message).
        duplicate: the exception class a name registered twice raises.
        hint: said after the list of known names (``"`gem-tasks metrics` lists them"``), or a
            function returning it (for a hint that depends on what is registered).
        list_known: whether the message lists the known names (a long registry may say so in
            its hint instead).
    """

    def __init__(
        self,
        kind: str,
        *,
        error: Callable[[str], Exception] = UnknownNameError,
        duplicate: Callable[[str], Exception] = ValueError,
        hint: str | Callable[[], str] = "",
        list_known: bool = True,
    ) -> None:
        self.kind = kind
        self._error = error
        self._duplicate = duplicate
        self._hint = hint
        self._list_known = list_known
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._lock = threading.RLock()

    @classmethod
    def of(
        cls, kind: str, entries: Iterable[T], *, name: Callable[[T], str] | None = None, **settings
    ) -> Registry[T]:
        """A registry of ``kind`` holding ``entries`` in order, each under ``name(entry)`` (by
        default its ``name`` attribute); ``settings`` are the constructor's keywords."""
        registry: Registry[T] = cls(kind, **settings)
        for entry in entries:
            registry.register(name(entry) if name else entry.name, entry)
        return registry

    def register(self, name: str, entry: T, *, aliases: Iterable[str] = ()) -> T:
        """Add ``entry`` under ``name`` and its ``aliases``; returns the entry. A name or alias
        already taken (as a name or as an alias) raises the registry's ``duplicate`` error."""
        aliases = tuple(aliases)
        with self._lock:
            for key in (name, *aliases):
                if key in self._entries or key in self._aliases:
                    raise self._duplicate(f"{self.kind} {key!r} is registered twice")
            if len(set((name, *aliases))) != 1 + len(aliases):
                raise self._duplicate(f"{self.kind} {name!r}: an alias repeats a name")
            self._entries[name] = entry
            for alias in aliases:
                self._aliases[alias] = name
        return entry

    def remove(self, name: str) -> T | None:
        """Take ``name`` and its aliases out (a test's or a guide's temporary registration);
        the entry, or None when nothing was registered under it."""
        with self._lock:
            entry = self._entries.pop(name, None)
            for alias in [a for a, target in self._aliases.items() if target == name]:
                del self._aliases[alias]
        return entry

    def copy(self) -> Registry[T]:
        """Another registry of the same kind holding the same entries, which registrations do
        not share (a test registers into a copy and puts the original back)."""
        other: Registry[T] = Registry(
            self.kind,
            error=self._error,
            duplicate=self._duplicate,
            hint=self._hint,
            list_known=self._list_known,
        )
        other._entries = dict(self._entries)
        other._aliases = dict(self._aliases)
        return other

    def canonical(self, name: str) -> str:
        """The registered name ``name`` is or is an alias of; an unknown name raises the
        registry's error with :meth:`unknown_message`."""
        key = self._aliases.get(name, name)
        if key not in self._entries:
            raise self._error(self.unknown_message(name))
        return key

    def unknown_message(self, name: object) -> str:
        """What an unknown ``name`` is told: the nearest registered name or alias, the known
        names (in order), the hint."""
        text = str(name)
        message = (
            f"unknown {self.kind} {text!r}{did_you_mean(text, [*self._entries, *self._aliases])}"
        )
        if self._list_known:
            message += f"; known: {', '.join(self._entries) or '(none)'}"
        hint = self._hint() if callable(self._hint) else self._hint
        return f"{message}; {hint}" if hint else message

    def names(self, *, aliases: bool = False) -> tuple[str, ...]:
        """The registered names in registration order (with every alias after them when
        ``aliases``)."""
        return (*self._entries, *(self._aliases if aliases else ()))

    def aliases_of(self, name: str) -> tuple[str, ...]:
        """The aliases registered for ``name`` (a registered name)."""
        key = self.canonical(name)
        return tuple(alias for alias, target in self._aliases.items() if target == key)

    def __getitem__(self, name: str) -> T:
        return self._entries[self.canonical(name)]

    def get(self, name: str, default: T | None = None) -> T | None:  # type: ignore[override]
        key = self._aliases.get(name, name)
        return self._entries.get(key, default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._aliases.get(name, name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
