"""Shared fixtures for the ovstage Python suite.

Every fixture releases what it creates (queries, path lists, stages), in the order the library
asks for: groups, reads, queries, path lists, then the stage. An autouse fixture turns any
``ResourceWarning`` raised by a finalizer (a handle the test forgot to release) into a failure,
so the suite also holds under ``-W error::ResourceWarning`` where finalizers only print.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import ovstage
import pytest

#: Callable signatures handed out by the helper fixtures below.
MakeQuery = Callable[[Sequence[str]], ovstage.Query]
WriteSealed = Callable[..., None]
ReadValues = Callable[[ovstage.Query, "int | str", int], dict[str, Any]]


@pytest.fixture(autouse=True)
def _fail_on_leaked_handles() -> Iterator[None]:
    """Fail the test if a finalizer had to release something (it warns ResourceWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    for w in caught:
        if not issubclass(w.category, ResourceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    assert not leaks, f"handles released by finalizers (not by the test): {leaks}"


@pytest.fixture
def stage(request: pytest.FixtureRequest) -> Iterator[ovstage.Stage]:
    """A fresh stage, destroyed after the test; with ``@pytest.mark.parity`` it keeps no
    history window (``history_ordinals=0``) and answers reads exactly as the reference."""
    if request.node.get_closest_marker("parity") is not None:
        s = ovstage.Stage("pytest", config=ovstage.StageConfig(history_ordinals=0))
    else:
        s = ovstage.Stage("pytest")
    try:
        yield s
    finally:
        # Drop unreachable wrappers while the stage is alive, so their finalizers warn.
        gc.collect()
        s.destroy()


@pytest.fixture
def paths(stage: ovstage.Stage) -> ovstage.PathDictionary:
    """The path dictionary borrowed from ``stage``."""
    return ovstage.PathDictionary(stage)


@contextlib.contextmanager
def query_over(stage: ovstage.Stage, prim_paths: Sequence[str]) -> Iterator[ovstage.Query]:
    """A query over ``prim_paths`` (in that order); releases the query and its path list."""
    dictionary = ovstage.PathDictionary(stage)
    with (
        dictionary.create_path_list_from_strings(list(prim_paths)) as plist,
        stage.query_from_path_list(plist) as query,
    ):
        yield query


@pytest.fixture
def make_query(stage: ovstage.Stage) -> Iterator[MakeQuery]:
    """``make_query(["/A", "/B"])`` -> a Query on ``stage``, released after the test."""
    with contextlib.ExitStack() as stack:

        def make(prim_paths: Sequence[str]) -> ovstage.Query:
            return stack.enter_context(query_over(stage, prim_paths))

        yield make


@pytest.fixture
def write_sealed(stage: ovstage.Stage) -> WriteSealed:
    """``write_sealed(query, attribute, ordinal, values, **kw)``: write, wait, seal ``ordinal``."""

    def write(
        query: ovstage.Query, attribute: int | str, ordinal: int, values: Any, **kwargs: Any
    ) -> None:
        kwargs.setdefault("is_array", False)
        stage.write_attribute(query, attribute, ordinal, values, **kwargs).wait()
        stage.advance_write_floor(ordinal).wait()

    return write


def group_values(dictionary: ovstage.PathDictionary, group: ovstage.ReadGroup) -> dict[str, Any]:
    """Map each prim path of a fixed-size group to its value (a copy), following index maps."""
    data = np.from_dlpack(group.dlpack(0))
    prim_paths = dictionary.get_path_strings(group.prim_list)
    values: dict[str, Any] = {}
    for local in range(group.prim_count):
        row = group.data_row_index(local) if group.has_data_index_map else local
        values[prim_paths[group.prim_index(local)]] = data[row].tolist()
    return values


@pytest.fixture
def read_values(stage: ovstage.Stage, paths: ovstage.PathDictionary) -> ReadValues:
    """``read_values(query, attribute, N)`` -> ``{prim path: value}`` of a ``latest(N)`` read.

    Raises the read's ``OvstageError`` when the read is rejected.
    """

    def read(query: ovstage.Query, attribute: int | str, ordinal: int) -> dict[str, Any]:
        values: dict[str, Any] = {}
        with stage.read_attributes(
            query, [attribute], ovstage.OrdinalRange.latest(ordinal)
        ) as read_handle:
            read_handle.wait()
            for group in read_handle.groups():
                with group:
                    if not group.is_delete:
                        values.update(group_values(paths, group))
        return values

    return read
