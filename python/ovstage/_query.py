"""Filter-query data classes: ``Predicate``, ``Filter``, ``QueryResult``."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

from ._abi import FilterRaw, OvxString, OvxStringOrToken, PredicateRaw
from ._enums import FilterOp
from ._guards import as_attribute, as_enum, as_sequence

__all__ = ["Filter", "Predicate", "QueryResult"]


@dataclass
class Predicate:
    """One condition: ``attribute`` ``op`` one of ``values`` (values are strings: paths, type
    names, schema names, or numbers for comparisons on numeric attributes). Checked when the
    filter is used (``Filter.to_c()``, ``Stage.query``), not when built."""

    attribute: int | str
    op: FilterOp | int
    values: Sequence[str] = ()

    def _validated(self, i: int) -> Predicate:
        """A checked copy: a token or name, a declared ``FilterOp``, a list of strings."""
        checked = Predicate.__new__(Predicate)
        checked.attribute = as_attribute(self.attribute, f"predicates[{i}].attribute")
        checked.op = as_enum(self.op, FilterOp, f"predicates[{i}].op")
        if isinstance(self.values, (str, bytes)):
            raise TypeError(
                f"predicates[{i}].values must be a sequence of strings, not a single string"
            )
        checked.values = [
            str(v) for v in as_sequence(self.values, f"predicates[{i}].values", "strings")
        ]
        return checked


@dataclass
class Filter:
    """Predicates ANDed together (an empty list: every prim)."""

    predicates: list[Predicate]

    def _validated(self) -> list[Predicate]:
        """Checked copies of the predicates (TypeError/ValueError naming the bad one)."""
        predicates = as_sequence(self.predicates, "predicates", "Predicate")
        out = []
        for i, p in enumerate(predicates):
            if not isinstance(p, Predicate):
                raise TypeError(f"predicates[{i}] must be a Predicate, got {type(p).__name__}")
            out.append(p._validated(i))
        return out

    def to_c(self) -> FilterRaw:
        """The checked filter as an ``ovstage_filter_t`` (attributes by token or name); the
        struct keeps the arrays it points into alive."""
        predicates = self._validated()
        raw_predicates = (PredicateRaw * max(1, len(predicates)))()
        keep: list[object] = [raw_predicates]
        for i, p in enumerate(predicates):
            values = (OvxString * max(1, len(p.values)))()
            for j, v in enumerate(p.values):
                data = v.encode("utf-8", "surrogatepass")
                values[j] = OvxString(data, len(data))
                keep.append(data)
            keep.append(values)
            if isinstance(p.attribute, int):
                attribute = OvxStringOrToken(p.attribute)
            else:
                name = p.attribute.encode("utf-8", "surrogatepass")
                keep.append(name)
                attribute = OvxStringOrToken(0, OvxString(name, len(name)))
            raw_predicates[i] = PredicateRaw(
                attribute, int(p.op), ctypes.addressof(values), len(p.values)
            )
        raw = FilterRaw(ctypes.addressof(raw_predicates) if predicates else 0, len(predicates))
        raw._keep = keep
        return raw


@dataclass
class QueryResult:
    """What a query found: the attributes discovered on its prims, its prim count, and the
    query's own handle (``all_handle``: not a new resource, never release it separately)."""

    attributes: list[int]
    total_prim_count: int
    all_handle: int
