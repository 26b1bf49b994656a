"""An immutable sequence whose items are built on first access and then kept.

Plans, grids and batches hold their data as the core's (or as columns) and build each
Python object only when it is read, so returning them costs about the C++ work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["LazyTuple"]

T = TypeVar("T")


class LazyTuple(Sequence[T]):
    """A sequence that behaves like the tuple of its items, each built by :meth:`_make`.

    Indexing, slicing (a tuple), iteration, equality (with a tuple or another of its
    kind), hashing and ``repr`` are the tuple's; reading an item twice gives the same
    object.

    Parameters
    ----------
    length
        Number of items.
    """

    __slots__ = ("_items",)

    def __init__(self, length: int) -> None:
        self._items: list[T | None] = [None] * length

    def _make(self, index: int) -> T:
        """Item ``index`` (``0 <= index < len(self)``), built once."""
        raise NotImplementedError

    def _item(self, index: int) -> T:
        item = self._items[index]
        if item is None:
            item = self._make(index)
            self._items[index] = item
        return item

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._item(i) for i in range(*index.indices(len(self))))
        n = len(self)
        i = index.__index__()
        if not -n <= i < n:
            raise IndexError(f"index {index} out of range for {n} items")
        return self._item(i % n)

    def __iter__(self) -> Iterator[T]:
        return (self._item(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyTuple, tuple)):
            return other is self or tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))
