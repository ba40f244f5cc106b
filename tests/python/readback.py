"""Read-back helpers shared by the data-plane tests (not a test module).

Every helper copies what it reads into plain Python values and releases each group and the
read handle before returning, so tests compare values, not views.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import ovstage
import pytest
from ovstage import ErrorCode, OrdinalRange, OvstageError


@dataclass
class Group:
    """A copied read group: its fields, and each prim's value keyed by prim path."""

    attribute: str
    ordinal: int
    is_delete: bool
    is_array: bool
    semantic: int
    raw_semantic: int
    prims: list[str]
    tensor_count: int
    data_count: int
    has_prim_index_map: bool
    has_data_index_map: bool
    floor: int
    layout_generation: int
    values: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def copy_group(dictionary: ovstage.PathDictionary, group: ovstage.ReadGroup) -> Group:
    """Copy one group: fixed rows follow the data index map; array rows are one tensor each."""
    list_paths = dictionary.get_path_strings(group.prim_list)
    prims = [list_paths[group.prim_index(k)] for k in range(group.prim_count)]
    meta = group.meta
    out = Group(
        attribute=dictionary.token_to_string(group.attribute),
        ordinal=group.ordinal,
        is_delete=group.is_delete,
        is_array=group.is_array,
        semantic=group.semantic,
        raw_semantic=int(group.raw.semantic),
        prims=prims,
        tensor_count=group.tensor_count,
        data_count=group.data_count,
        has_prim_index_map=group.has_prim_index_map,
        has_data_index_map=group.has_data_index_map,
        floor=meta.attribute_write_floor_ordinal,
        layout_generation=meta.layout_generation,
    )
    if group.is_delete:
        return out
    fixed = None if group.is_array else np.from_dlpack(group.dlpack(0))
    for local, path in enumerate(prims):
        row = group.data_row_index(local) if group.has_data_index_map else local
        if fixed is not None:
            value = fixed[row]
            # A tuple row (its component axes, e.g. (3,) or (4, 4)) as one flat list.
            out.values[path] = value.reshape(-1).tolist() if value.ndim else value.tolist()
            tensor = group.tensor(0)
        else:
            out.values[path] = group.array(row).reshape(-1).tolist()
            tensor = group.tensor(row)
        out.dtypes[path] = stored_dtype(tensor)
    return out


def stored_dtype(tensor: ovstage.DLTensor) -> tuple[int, int, int]:
    """``(code, bits, lanes)`` of the column a typed group tensor shows: its component axes
    (everything after the row or element axis) are the stored tuple width."""
    dtype = tensor.dtype
    width = int(np.prod(tensor.shape_tuple[1:], dtype=np.int64)) * int(dtype.lanes)
    return (int(dtype.code), int(dtype.bits), width)


def read_groups(
    stage: ovstage.Stage,
    query: ovstage.Query,
    attributes: Sequence[int | str],
    ordinal_range: OrdinalRange,
) -> list[Group]:
    """Copy every group of a read (raises the read's OvstageError when it is rejected)."""
    dictionary = ovstage.PathDictionary(stage)
    copied: list[Group] = []
    with stage.read_attributes(query, list(attributes), ordinal_range) as read:
        read.wait()
        for group in read.groups():
            with group:
                copied.append(copy_group(dictionary, group))
    return copied


def values_of(groups: Sequence[Group], attribute: str) -> dict[str, Any]:
    """``{prim path: value}`` of ``attribute`` over the non-tombstone groups."""
    values: dict[str, Any] = {}
    for group in groups:
        if group.attribute == attribute and not group.is_delete:
            assert not set(values) & set(group.values), "a prim appears in two groups"
            values.update(group.values)
    return values


def tombstones_of(groups: Sequence[Group], attribute: str) -> list[str]:
    """The prim paths named by ``attribute``'s tombstone groups (sorted)."""
    return sorted(p for g in groups if g.attribute == attribute and g.is_delete for p in g.prims)


def latest(
    stage: ovstage.Stage, query: ovstage.Query, attribute: int | str, ordinal: int
) -> dict[str, Any]:
    """``{prim path: value}`` of a ``latest(ordinal)`` read of one attribute."""
    groups = read_groups(stage, query, [attribute], OrdinalRange.latest(ordinal))
    name = (
        attribute
        if isinstance(attribute, str)
        else ovstage.PathDictionary(stage).token_to_string(attribute)
    )
    return values_of(groups, name)


def read_error(
    stage: ovstage.Stage,
    query: ovstage.Query,
    attributes: Sequence[int | str],
    ordinal_range: OrdinalRange,
) -> int:
    """The code a read fails with (asserts that it fails, both at wait and at fetch)."""
    with stage.read_attributes(query, list(attributes), ordinal_range) as read:
        with pytest.raises(OvstageError) as waited:
            read.wait()
        with pytest.raises(OvstageError) as fetched:
            read.fetch_next()
        assert fetched.value.code == waited.value.code
    return waited.value.code


def assert_rejected(op: ovstage.Operation, code: int, *fragments: str) -> str:
    """Assert a synchronous rejection with ``code`` whose message contains ``fragments``."""
    assert not op.ok, f"expected {ErrorCode(code).name}, the enqueue was accepted"
    assert op.op_id == 0
    assert op.status == code, (ErrorCode(op.status).name, op.error_message())
    message = op.error_message()
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    with pytest.raises(OvstageError) as info:
        op.wait()
    assert info.value.code == code
    return message


def floor_of(stage: ovstage.Stage, attribute: int | str | None = None) -> int:
    """Fetch (and release) ``get_attribute_write_floor(attribute)``."""
    with stage.get_attribute_write_floor(attribute) as query:
        return query.fetch()


def oldest_preserved(stage: ovstage.Stage) -> int:
    """Fetch (and release) ``get_oldest_preserved_ordinal()``."""
    with stage.get_oldest_preserved_ordinal() as query:
        return query.fetch()


def prim_paths_held(stage: ovstage.Stage, query: ovstage.Query, ordinal: int) -> list[str]:
    """The query's prims the stage holds, from the derived ``usd-path`` (sorted)."""
    dictionary = ovstage.PathDictionary(stage)
    groups = read_groups(stage, query, ["usd-path"], OrdinalRange.latest(ordinal))
    values = values_of(groups, "usd-path")
    for path, path_id in values.items():
        assert dictionary.path_to_string(path_id) == path
    return sorted(values)
