"""The write half of a population: a :class:`~._batch.Batch` into the stage at one ordinal.

Writes take the same path as a client's: path lists, queries and ``write_attributes`` at the
op's ordinal (UPSERT), so floors, ordinal admission and change membership apply unchanged.
Each column is written once for all its prims, its rows stacked into one array (ragged rows of
one length packed into one tensor); columns over the same prims share one batched write.

Before the first write every touched attribute's write floor is checked (after the floor
advances submitted so far), so an ordinal at or below a floor fails with nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._dlpack import make_dltensor, numpy_to_dldatatype
from .._enums import AttributeMode
from .._errors import ErrorCode, OvstageError
from .._stage import WriteDesc
from ._batch import Batch, Column
from ._mapping import DictionaryInterner

if TYPE_CHECKING:
    from .._ops import Operation
    from .._stage import Stage

__all__ = ["check_floors", "write_batch"]


def check_floors(stage: Stage, names: set[str], ordinal: int) -> None:
    """OvstageError(WRITE_FLOOR_VIOLATION) when ``ordinal`` is at or below the write floor of
    an attribute in ``names`` (the floor advances enqueued so far included)."""
    for name in sorted(names):
        with stage.get_attribute_write_floor(name) as floor_query:
            floor = floor_query.fetch()
        if ordinal <= floor:
            raise OvstageError(
                ErrorCode.WRITE_FLOOR_VIOLATION,
                f"ordinal {ordinal} is at or below the write floor {floor} of attribute "
                f"{name!r}; nothing was written",
            )


def _fixed_payload(column: Column) -> Any:
    """The rows of a fixed column as one ``(prims, lanes)`` array (``(prims,)`` for one lane),
    a view of the column's buffer."""
    values = column.values()
    if column.ctype.lanes == 1:
        return values
    return values.reshape(len(column), column.ctype.lanes)


def _array_payload(column: Column) -> Any:
    """The rows of a ragged column: one packed tensor when every row has the same length,
    else one tensor per row (views of the column's buffer); elements of several lanes travel
    as lanes (an array write takes lanes literally)."""
    lanes = column.ctype.lanes
    values = column.values()
    lengths = column.lengths()
    element = numpy_to_dldatatype(column.ctype.numpy_dtype, lanes=lanes) if lanes > 1 else None
    if min(lengths) == max(lengths):
        if element is None:
            return values
        return make_dltensor(values, dtype=element, shape=(values.size // lanes,))
    ends = np.cumsum(np.frombuffer(lengths, dtype=np.int64)) * lanes
    rows = np.split(values, ends[:-1])
    if element is None:
        return rows
    return [make_dltensor(r, dtype=element, shape=(r.size // lanes,)) for r in rows]


def _write_desc(column: Column) -> WriteDesc:
    ctype = column.ctype
    tensors = _array_payload(column) if ctype.is_array else _fixed_payload(column)
    return WriteDesc(
        column.name,
        tensors,
        ctype.is_array,
        semantic=int(ctype.semantic),
        attribute_mode=AttributeMode.FORCE if column.force else AttributeMode.REJECT,
    )


class _Submitted:
    """The ops a batch enqueued and the handles they use, released once they finished."""

    def __init__(self, stage: Stage, interner: DictionaryInterner) -> None:
        self.stage = stage
        self.interner = interner
        self.ops: list[Operation] = []
        self.queries: list[Any] = []
        self.path_lists: list[Any] = []

    def query(self, paths: list[str]) -> Any:
        # one native call interns the whole list (not one per prim path)
        path_list = self.interner.dictionary.create_path_list_from_strings(paths)
        self.path_lists.append(path_list)
        query = self.stage.query_from_path_list(path_list)
        self.queries.append(query)
        return query

    def finish(self) -> OvstageError | None:
        """Wait every op, release every handle; the first failure (None if none)."""
        failure: OvstageError | None = None
        for op in self.ops:
            try:
                op.wait()
            except OvstageError as exc:
                failure = failure or exc
        releases = [self.stage.release_query(q) for q in self.queries]
        for release in releases:
            try:
                release.wait()
            except OvstageError as exc:
                failure = failure or exc
        for path_list in self.path_lists:
            path_list.release()
        return failure


def write_batch(
    stage: Stage,
    interner: DictionaryInterner,
    batch: Batch,
    ordinal: int,
    checkpoint: Callable[[], None] | None = None,
) -> None:
    """Write ``batch`` at ``ordinal``: deletions first, then every column; raise the first
    failure once every op it enqueued has finished."""
    check_floors(stage, batch.attribute_names(), ordinal)
    if checkpoint is not None:
        checkpoint()
    submitted = _Submitted(stage, interner)
    try:
        if batch.deleted_prims:
            query = submitted.query(batch.deleted_prims)
            submitted.ops.append(stage.delete_attributes(query, [], ordinal))
        by_names: dict[tuple[str, ...], list[str]] = {}
        for path, names in batch.deleted_attributes.items():
            if names:
                by_names.setdefault(tuple(sorted(names)), []).append(path)
        for sorted_names, paths in by_names.items():
            query = submitted.query(paths)
            submitted.ops.append(stage.delete_attributes(query, list(sorted_names), ordinal))
        # Columns over the same prims go in one batched write (they share the query).
        by_prims: dict[bytes, list[Column]] = {}
        for column in batch.columns.values():
            by_prims.setdefault(column.prims.tobytes(), []).append(column)
        for columns in by_prims.values():
            paths = batch.paths
            query = submitted.query([paths[i] for i in columns[0].prims])
            descs = [_write_desc(c) for c in columns]
            submitted.ops.append(stage.write_attributes(query, descs, ordinal))
    finally:
        failure = submitted.finish()
    if failure is not None:
        raise OvstageError(failure.code, f"writing at ordinal {ordinal}: {failure.message}")
