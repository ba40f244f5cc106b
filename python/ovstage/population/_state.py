"""The population state of one stage and the body of each population op.

A stage gets its state on its first population call: the op stream that runs its ops, the USD
source (set by the first successful open), the population scope (descs, domains, time), and
what population wrote (so that applying USD changes can remove what USD no longer has). Op
bodies run on the stream's worker; each reads everything from USD first and only then writes
(``_batch`` then ``_writer``), and commits its new state only once the writes succeeded.
"""

from __future__ import annotations

import functools
import logging
import threading
import time as _time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .._enums import PopulationDomain
from .._errors import ErrorCode, OvstageError
from .._pathdict import PathDictionary
from ._batch import WORLD_MATRIX, XFORM, Batch, SampledPrim, read_scope, read_time_samples
from ._descs import Desc
from ._mapping import DictionaryInterner
from ._records import PathTable, WrittenColumns
from ._selection import InstancingTable, Scope, instancing_table, register_table, resolve_scope
from ._source import Changes, ReferenceEdit, UsdSource, open_layer
from ._stream import OpStream
from ._writer import write_batch

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = ["PopulationState", "existing_state", "state_of"]

_log = logging.getLogger("ovstage.population")

_states: weakref.WeakKeyDictionary[Stage, PopulationState] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()

#: ``progress(done, total)``: prims read so far and prims in scope; ``(total, total)`` once
#: the op's writes are done.
Progress = Callable[[int, int], object]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _compacting(
    body: Callable[Concatenate[PopulationState, _P], _R],
) -> Callable[Concatenate[PopulationState, _P], _R]:
    """An op body after which the per-prim records are packed again (done or failed), so
    that no per-prim Python object outlives the op (docs/architecture.md "Memory")."""

    @functools.wraps(body)
    def run(state: PopulationState, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return body(state, *args, **kwargs)
        finally:
            state.compact_records()

    return run


def existing_state(stage: Stage) -> PopulationState | None:
    """The stage's population state, None if it never had a population call."""
    with _states_lock:
        return _states.get(stage)


def state_of(stage: Stage) -> PopulationState:
    """The stage's population state, made on first use."""
    with _states_lock:
        state = _states.get(stage)
        if state is None:
            state = _states[stage] = PopulationState(stage)
        return state


def _interner(stage: Stage) -> DictionaryInterner:
    """The token and path ids of ``stage``'s dictionary and its string pins, for one op."""
    return DictionaryInterner(PathDictionary(stage), stage)


class PopulationState:
    """One stage's population: its op stream, USD source, scope and written content."""

    def __init__(self, stage: Stage) -> None:
        self._stage = weakref.ref(stage)
        self.stream = OpStream(stage._label())
        # Set at enqueue: ops that need a populated stage are accepted once an open was.
        self.open_accepted = False
        self._next_handle = 1
        # The rest is the worker's (ops run one at a time).
        self.source: UsdSource | None = None
        self.descs: tuple[Desc, ...] = ()
        self.time = float("nan")
        # What population wrote: in all (types, for FORCE and the world matrix), and from the
        # current source (the part applying USD changes may remove again).
        self.written = WrittenColumns()
        self.source_written = WrittenColumns()
        self.sampled: PathTable[SampledPrim] = PathTable()
        self.instances: dict[str, str] = {}  # populated instance root -> prototype root
        stage._destroy_hooks.append(self.close)

    def close(self) -> None:
        """Stop the stream (the stage is being destroyed) and let the source go."""
        self.stream.stop()
        if self.source is not None:
            self.source.close()
            self.source = None

    def compact_records(self) -> None:
        """Pack the per-prim records into their between-ops form."""
        self.written.compact()
        self.source_written.compact()
        self.sampled.compact()

    def reserve_handle(self) -> int:
        """A new reference handle (reserved at enqueue)."""
        handle, self._next_handle = self._next_handle, self._next_handle + 1
        return handle

    def issued_handle(self, handle: int) -> bool:
        return 0 < handle < self._next_handle

    @property
    def domains(self) -> int:
        value = 0
        for desc in self.descs:
            value |= int(desc.domains)
        return value

    # -- helpers for the op bodies -----------------------------------------------------

    def _live_stage(self) -> Stage:
        stage = self._stage()
        if stage is None or stage._destroyed:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "the stage was destroyed")
        return stage

    def _require_source(self) -> UsdSource:
        if self.source is None:
            raise OvstageError(
                ErrorCode.NOT_FOUND, "the stage has no USD source (no open succeeded)"
            )
        return self.source

    def _write(
        self, stage: Stage, interner: DictionaryInterner, batch: Batch, ordinal: int
    ) -> None:
        write_batch(stage, interner, batch, ordinal, self.stream.check_running)

    def _commit(self, batch: Batch, scopes: list[Scope]) -> None:
        """Record what a successful write put on the stage, and the instance roots of the
        scopes it read."""
        for path in batch.deleted_prims:
            self.written.remove(path)
            self.source_written.remove(path)
            self.sampled.pop(path)
            self.instances.pop(path, None)
        for path, names in batch.deleted_attributes.items():
            self.written.remove(path, names)
            self.source_written.remove(path, names)
        for path, columns in batch.written.items():
            self.written.update(path, columns)
            self.source_written.update(path, columns)
        stage = self._stage()
        for scope in scopes:
            for entry in scope.prims:
                self.instances.pop(entry.path, None)
            self.instances.update(instancing_table(None, scope).prototype_of)
        if stage is not None:
            register_table(stage, InstancingTable(dict(self.instances)))

    def _read(
        self,
        scope: Scope,
        source: UsdSource,
        seconds: float,
        interner: DictionaryInterner,
        batch: Batch,
        sampled: dict[str, SampledPrim],
        progress: Progress | None = None,
    ) -> None:
        read_scope(
            scope,
            source.usd,
            source.time_code(seconds),
            interner,
            batch=batch,
            previous=self.written.get,
            sampled=sampled,
            progress=progress,
            checkpoint=self.stream.check_running,
        )

    def _populate(
        self,
        stage: Stage,
        source: UsdSource,
        descs: tuple[Desc, ...],
        ordinal: int,
        seconds: float,
        what: str,
        progress: Progress | None,
    ) -> tuple[Batch, Scope, dict[str, SampledPrim]]:
        """Read the whole scope of ``descs`` from ``source`` and write it (merging)."""
        started = _time.perf_counter()
        interner = _interner(stage)
        scope = resolve_scope(source.usd, descs, lazy=True)
        self.stream.check_running()
        total = len(scope.prims)
        _log.info("%s: populating %d prims at ordinal %d", what, total, ordinal)
        batch = Batch()
        sampled: dict[str, SampledPrim] = {}
        self._read(scope, source, seconds, interner, batch, sampled, progress)
        read_done = _time.perf_counter()
        self._write(stage, interner, batch, ordinal)
        if progress is not None:
            progress(total, total)
        _log.info(
            "%s: wrote %d columns (%d values) on %d prims at ordinal %d in %.3f s "
            "(reading USD %.3f s)",
            what,
            len(batch.columns),
            len(batch),
            len(batch.paths),
            ordinal,
            _time.perf_counter() - started,
            read_done - started,
        )
        return batch, scope, sampled

    # -- op bodies (run on the worker) ---------------------------------------------------

    @_compacting
    def run_open(
        self,
        root_layer: Any,
        path: str | None,
        ordinal: int,
        seconds: float,
        descs: tuple[Desc, ...],
        what: str,
        progress: Progress | None,
    ) -> None:
        """Open a new source (from ``root_layer``, or the file at ``path``) and populate it,
        merging into what the stage holds."""
        stage = self._live_stage()
        if root_layer is None:
            assert path is not None
            root_layer = open_layer(path, "path")
        source = UsdSource.open(root_layer)
        try:
            batch, scope, sampled = self._populate(
                stage, source, descs, ordinal, seconds, what, progress
            )
        except BaseException:
            source.close()
            raise
        if self.source is not None:
            self.source.close()
        source.take_changes()  # the open itself is no change to apply later
        self.source, self.descs, self.time = source, descs, seconds
        self.sampled = PathTable(sampled)
        self.source_written = WrittenColumns()
        self._commit(batch, [scope])

    @_compacting
    def run_repopulate(
        self,
        ordinal: int,
        seconds: float,
        descs: tuple[Desc, ...],
        what: str,
        progress: Progress | None,
    ) -> None:
        """Populate the loaded source again with new descs, which become the scope."""
        stage = self._live_stage()
        source = self._require_source()
        batch, scope, sampled = self._populate(
            stage, source, descs, ordinal, seconds, what, progress
        )
        self.descs, self.time, self.sampled = descs, seconds, PathTable(sampled)
        self._commit(batch, [scope])

    def _changes_batch(
        self, source: UsdSource, changes: Changes, interner: DictionaryInterner, seconds: float
    ) -> tuple[Batch, list[Scope], dict[str, SampledPrim]]:
        """The republication of ``changes``: every selected attribute of each republished
        prim, and the removal of what this source populated that USD no longer has."""
        roots = _republish_roots(changes)
        usd = source.usd
        batch = Batch()
        scopes: list[Scope] = []
        sampled: dict[str, SampledPrim] = {}
        for root, subtree in roots:
            if not usd.GetPrimAtPath(root).IsValid():
                continue
            scope = resolve_scope(usd, self.descs, root, lazy=True)
            if not subtree:
                scope.prims = [e for e in scope.prims if e.path == root]
            if root != "/":
                scope.stage_metadata_paths = ()
            scopes.append(scope)
            self._read(scope, source, seconds, interner, batch, sampled)
        subtrees = {root for root, subtree in roots if subtree}
        singles = {root for root, subtree in roots if not subtree}
        for path in self.source_written:
            if path == "/" or path in batch.written:
                continue
            touched = path in singles or any(a in subtrees for a in _self_and_ancestors(path))
            if touched and not usd.GetPrimAtPath(path).IsValid():
                batch.deleted_prims.append(path)
        batch.deleted_prims.sort()
        for path, columns in batch.written.items():
            old = self.source_written.get(path)
            gone = {n for n in old if n not in columns and n != WORLD_MATRIX}
            if WORLD_MATRIX in old and XFORM not in columns:
                gone.add(WORLD_MATRIX)  # no longer xformable
            if gone:
                batch.deleted_attributes[path] = sorted(gone)
        return batch, scopes, sampled

    def _keep_sampled(self, batch: Batch, sampled: dict[str, SampledPrim]) -> None:
        """Replace the time-varying part of the prims a change republished."""
        for path in batch.paths:
            if path not in sampled:
                self.sampled.pop(path)
        self.sampled.update(sampled)

    @_compacting
    def run_apply_changes(self, ordinal: int, what: str) -> None:
        """Publish the USD edits made since the last apply (a no-op when there are none)."""
        stage = self._live_stage()
        source = self._require_source()
        changes = source.take_changes()
        if not changes:
            return
        try:
            interner = _interner(stage)
            batch, scopes, sampled = self._changes_batch(source, changes, interner, self.time)
            self._write(stage, interner, batch, ordinal)
        except BaseException:
            source.restore_changes(changes)
            raise
        self._keep_sampled(batch, sampled)
        self._commit(batch, scopes)
        _log.info(
            "%s: republished %d prims, removed %d at ordinal %d",
            what,
            len(batch.paths),
            len(batch.deleted_prims),
            ordinal,
        )

    @_compacting
    def run_apply_time(self, ordinal: int, seconds: float, what: str) -> None:
        """Re-sample every time-varying property in scope at ``seconds`` (RENDERING: publish
        pending USD edits in the same write)."""
        stage = self._live_stage()
        source = self._require_source()
        interner = _interner(stage)
        changes = Changes()
        batch = Batch()
        scopes: list[Scope] = []
        sampled: dict[str, SampledPrim] = {}
        if self.domains & PopulationDomain.RENDERING:
            changes = source.take_changes()
        try:
            if changes:
                batch, scopes, sampled = self._changes_batch(source, changes, interner, seconds)
            pending = {p: e for p, e in self.sampled.items() if p not in batch.deleted_prims}
            read_time_samples(
                pending,
                source.usd,
                source.time_code(seconds),
                interner,
                batch=batch,
                previous=self.written.get,
                checkpoint=self.stream.check_running,
            )
            self._write(stage, interner, batch, ordinal)
        except BaseException:
            if changes:
                source.restore_changes(changes)
            raise
        self.time = seconds
        if changes:
            self._keep_sampled(batch, sampled)
        self._commit(batch, scopes)

    def run_add_reference(
        self, handle: int, layer: Any, path: str | None, target: Any, what: str
    ) -> int:
        """Bring a layer into the source at ``target``; the handle undoes it."""
        del what
        source = self._require_source()
        if layer is None:
            assert path is not None
            layer = open_layer(path, "ref_file_path")
        source.references[handle] = source.add_reference(layer, target)
        return handle

    def run_remove_reference(self, handle: int, what: str) -> None:
        """Revert what the add of ``handle`` did."""
        del what
        source = self._require_source()
        edit: ReferenceEdit | None = source.references.pop(handle, None)
        if edit is None:
            raise OvstageError(
                ErrorCode.INVALID_ARGUMENT,
                f"reference handle {handle} is not in the USD source (removed already, or its "
                "add did not complete)",
            )
        source.remove_reference(edit)

    @_compacting
    def run_reset(self, what: str) -> None:
        """Empty the USD source; the stage keeps its content until changes are applied."""
        del what
        old = self._require_source()
        old.close()
        self.source = UsdSource.empty()
        self.source.mark_everything_changed()
        self.sampled = PathTable()
        # Everything populated came from USD, which is empty now: the next apply removes it.
        self.source_written = self.written.copy()


def _self_and_ancestors(path: str) -> Iterator[str]:
    """``path``, its parent, ... up to ``/``."""
    yield path
    while path != "/":
        path = path.rsplit("/", 1)[0] or "/"
        yield path


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _republish_roots(changes: Changes) -> list[tuple[str, bool]]:
    """``(prim path, with its subtree)`` for each place ``changes`` touched, outermost
    first: a resynced path republishes its prim's subtree, a value or metadata change only
    its prim."""
    if changes.everything or "/" in changes.resynced:
        return [("/", True)]
    subtrees = sorted({_prim_of(p) for p in changes.resynced})
    kept: list[str] = []
    for path in subtrees:
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    roots = [(p, True) for p in kept]
    singles = sorted({_prim_of(p) for p in changes.changed} - set(kept))
    roots.extend((p, False) for p in singles if not any(_under(p, k) for k in kept))
    return roots


def _prim_of(path: str) -> str:
    """The prim path of a prim or property path (``/A.x`` -> ``/A``)."""
    return path.split(".", 1)[0] or "/"
