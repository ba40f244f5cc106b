"""Filter-query data classes: ``Predicate``, ``Filter``, ``QueryResult``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._enums import FilterOp
from ._guards import as_attribute, as_enum, as_sequence

__all__ = ["Filter", "Predicate", "QueryResult"]


@dataclass
class Predicate:
    """One condition: ``attribute`` ``op`` one of ``values`` (values are strings: paths, type
    names, schema names, or numbers for comparisons on numeric attributes)."""

    attribute: int | str
    op: FilterOp
    values: Sequence[str] = ()

    def __post_init__(self) -> None:
        self.attribute = as_attribute(self.attribute)
        self.op = as_enum(self.op, FilterOp, "op")
        if isinstance(self.values, (str, bytes)):
            raise TypeError("values must be a sequence of strings, not a single string")
        self.values = [str(v) for v in as_sequence(self.values, "values", "strings")]


@dataclass
class Filter:
    """Predicates ANDed together (no predicate: every prim)."""

    predicates: list[Predicate] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.predicates = as_sequence(self.predicates, "predicates", "Predicate")  # type: ignore[assignment]
        for i, p in enumerate(self.predicates):
            if not isinstance(p, Predicate):
                raise TypeError(f"predicates[{i}] must be a Predicate, got {type(p).__name__}")


@dataclass
class QueryResult:
    """What a query found: the attributes discovered on its prims, its prim count, and the
    query's own handle (``all_handle``: not a new resource, never release it separately)."""

    attributes: list[int]
    total_prim_count: int
    all_handle: int
