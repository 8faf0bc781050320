"""Named registries with helpful errors (suites, evaluators, readouts).

A registry is filled once at import time by decorators and then read only; lookups of an
unknown name fail with a "did you mean" suggestion instead of a KeyError.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from matbench.errors import MatbenchError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        close = difflib.get_close_matches(name, self._items, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise MatbenchError(f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(sorted(self._items))}.")

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
