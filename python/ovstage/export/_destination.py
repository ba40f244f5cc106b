"""Where an export goes: reusable destinations, layers and stages, and the export itself.

An :class:`ExportDestination` is a private in-memory ``Sdf.Layer`` tied to one USD identifier
and one stage. Exports add opinions to it in memory; only :meth:`ExportDestination.save`
writes it to storage, atomically for files (written to a temporary file beside the target,
then renamed over it, so a failing save leaves the stored file as it was). Only one live
destination may own a canonical identifier in the process.

:func:`export_into_layer` is the one body every export runs: check the predicates, read the
state (``_select``), plan (``_plan``), write (``_author``).
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import ErrorCode, OvstageError
from .._warn import warn_finalized
from ..population._operation import set_last_error
from ..population._usd import Sdf
from . import _author
from ._guard import check_call
from ._operation import (
    DestinationCreateOperation,
    DestinationOperation,
    ExportOperation,
    submit,
)
from ._plan import plan
from ._rules import (
    ExportDestinationMode,
    ExportOptions,
    ExportSelection,
    as_enum,
    make_options,
    new_report,
)
from ._select import KnownOpinions, check_predicates, read_state

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = ["ExportDestination", "export_into_layer", "raising", "save_layer"]

T = TypeVar("T")


def export_into_layer(
    stage: Stage, layer: Any, options: ExportOptions, known: KnownOpinions | None = None
) -> dict[str, int]:
    """Export ``stage``'s committed state into ``layer`` (in memory); the report.
    ``known``: what the layer holds, when the caller tracks it (else the layer is walked for a
    change export)."""
    check_predicates(options.prim_predicate, options.property_predicate)
    report = new_report()
    changes = options.selection == ExportSelection.CHANGED_PROPERTIES_SINCE_ORDINAL
    if changes and known is None:
        known = KnownOpinions.of_layer(layer)
    state = read_state(stage, options, known)
    chosen = plan(
        state,
        options,
        report,
        None if layer.empty else _author.existing_type_of(layer),
        _author.prim_fields(),
        _author.layer_fields(),
    )
    _author.author(layer, chosen)
    if known is not None:
        known.add(chosen.prims, state.resolver.path_ids())
        known.names.update(batch.name for batch in chosen.attributes)
        known.names.update(name for _, name, _ in chosen.relationships)
        known.names.update(name for _, name, _, _ in chosen.connections)
        known.forget(chosen.removed_prims)
    return report


def raising(what: str, run: Callable[[], T]) -> T:
    """``run()``; an OvstageError comes out as ``"<what> failed: <message>"`` (and is this
    thread's population ``last_error()``)."""
    try:
        return run()
    except OvstageError as exc:
        message = f"{what} failed: {exc.message}"
        set_last_error(message)
        raise OvstageError(exc.code, message) from None


def _file_format(identifier: str) -> Any:
    extension = os.path.splitext(identifier)[1].lstrip(".")
    found = Sdf.FileFormat.FindByExtension(extension) if extension else None
    if not found:
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT,
            f"identifier {identifier!r}: not a file name OpenUSD can write (.usda, .usdc, .usd)",
        )
    return found


def save_layer(layer: Any, identifier: str) -> None:
    """Write ``layer``'s content to file ``identifier``: to a temporary file in the same
    directory first, renamed over the target once complete (no partial file is left)."""
    _file_format(identifier)
    target = os.path.abspath(identifier)
    directory, base = os.path.split(target)
    stem, extension = os.path.splitext(base)
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{stem}.", suffix=f".tmp{extension}", dir=directory
        )
    except OSError as exc:
        raise OvstageError(
            ErrorCode.OP_FAILED, f"identifier {identifier!r}: cannot write there ({exc.strerror})"
        ) from None
    os.close(fd)
    try:
        try:
            written = layer.Export(temporary)
        except Exception as exc:  # a Tf error from the file format
            raise OvstageError(
                ErrorCode.OP_FAILED, f"identifier {identifier!r}: OpenUSD could not write it: {exc}"
            ) from None
        if not written:
            raise OvstageError(
                ErrorCode.OP_FAILED, f"identifier {identifier!r}: OpenUSD could not write it"
            )
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    reloaded = Sdf.Layer.Find(target)
    if reloaded:  # a layer of that file already open in this process sees the new content
        reloaded.Reload(force=True)


# -- destinations ------------------------------------------------------------------------

_handles = itertools.count(1)
_registry_lock = threading.Lock()
_active: dict[str, weakref.ref[ExportDestination]] = {}


def _canonical(identifier: str) -> str:
    return os.path.realpath(os.path.abspath(identifier))


class ExportDestination:
    """A reusable export destination (see the module documentation).

    ``create(stage, identifier, mode)`` makes one; ``export(ordinal, **options)`` adds the
    stage's committed state to it in memory; ``save()`` writes it to ``identifier`` and keeps
    it open; ``close()`` discards unsaved content. A context manager (exit closes, never
    saves). A destination garbage-collected open is closed by its finalizer, with a
    ``ResourceWarning``.
    """

    def __init__(self, stage: Stage, lib: Any, handle: int, identifier: str) -> None:
        self._stage = stage
        self._lib = lib
        self._handle = int(handle)
        self._identifier = identifier
        self._layer: Any = None
        self._closed = False
        self._closing = False
        self._lock = threading.RLock()
        self._canonical = ""
        self._mode = ExportDestinationMode.EMPTY
        self._known: KnownOpinions | None = None

    # -- creation ------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        stage: Stage,
        identifier: object,
        mode: object = ExportDestinationMode.EMPTY,
    ) -> ExportDestination:
        """A destination for file ``identifier`` (raises on failure)."""
        destination = cls.reserve(stage, identifier, mode)
        try:
            destination._open()
        except BaseException:
            destination._release()
            raise
        return destination

    @classmethod
    def reserve(cls, stage: Stage, identifier: object, mode: object) -> ExportDestination:
        """Check the arguments and claim the identifier; the layer is made by ``_open``."""
        check_call(stage, "ExportDestination.create")
        if not isinstance(identifier, (str, os.PathLike)):
            raise TypeError(f"identifier must be a str, got {type(identifier).__name__}")
        text = os.fspath(identifier)
        if not isinstance(text, str) or not text:
            raise ValueError("identifier must be a non-empty file name")
        chosen = as_enum(mode, ExportDestinationMode, "mode")
        _file_format(text)
        canonical = _canonical(text)
        with _registry_lock:
            live = _active.get(canonical)
            holder = live() if live is not None else None
            if holder is not None and not holder._closed:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"identifier {text!r}: a USD export destination for this identifier is "
                    "already active",
                )
            destination = cls(stage, None, next(_handles), text)
            destination._mode = chosen
            destination._canonical = canonical
            _active[canonical] = weakref.ref(destination)
        return destination

    def _open(self) -> None:
        layer = Sdf.Layer.CreateAnonymous(os.path.basename(self._identifier))
        if self._mode == ExportDestinationMode.OPEN_EXISTING:
            try:
                source = Sdf.Layer.FindOrOpen(self._identifier)
            except Exception as exc:
                source = None
                why = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
            else:
                why = ""
            if not source:
                raise OvstageError(
                    ErrorCode.OP_FAILED,
                    f"identifier {self._identifier!r}: cannot be opened {why}".rstrip(),
                )
            layer.TransferContent(source)
        self._known = KnownOpinions.of_layer(layer)
        self._layer = layer

    def _release(self) -> None:
        self._closed = True
        self._layer = None
        with _registry_lock:
            live = _active.get(self._canonical)
            if live is not None and live() in (self, None):
                del _active[self._canonical]

    # -- properties ----------------------------------------------------------------------

    @property
    def handle(self) -> int:
        return self._handle

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def identifier(self) -> str:
        return self._identifier

    @property
    def stage(self) -> Stage:
        return self._stage

    @property
    def layer(self) -> Any:
        """The destination's in-memory ``Sdf.Layer`` (read it, do not keep editing it)."""
        self._require_open("layer")
        return self._layer

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"ExportDestination({self._handle}, {self._identifier!r}, {state})"

    def _require_live(self, what: str) -> None:
        """Queued work runs while the destination is closing (a close queued after it)."""
        if self._closed:
            raise RuntimeError(
                f"ExportDestination.{what}: the destination {self._identifier!r} is closed"
            )
        if self._layer is None:
            raise RuntimeError(
                f"ExportDestination.{what}: the destination {self._identifier!r} was not "
                "opened (make destinations with ExportDestination.create)"
            )

    def _require_open(self, what: str) -> None:
        if self._closed or self._closing:
            raise RuntimeError(
                f"ExportDestination.{what}: the destination {self._identifier!r} is "
                f"{'closed' if self._closed else 'closing'}"
            )

    # -- work ----------------------------------------------------------------------------

    def export_options(self, options: ExportOptions) -> dict[str, int]:
        """Add the exported opinions (in memory)."""
        with self._lock:
            self._require_live("export")
            # Everything that can refuse an export (arguments, ordinals, reads, REQUIRED
            # rules, FAIL policies) is found before the first edit, so a failing export
            # leaves the content as it was; only OpenUSD failing in the middle of authoring
            # could leave part of an export in memory (never saved by itself).
            if self._known is None:
                self._known = KnownOpinions.of_layer(self._layer)
            return export_into_layer(self._stage, self._layer, options, self._known)

    def save_now(self) -> bool:
        with self._lock:
            self._require_live("save")
            save_layer(self._layer, self._identifier)
            return True

    def close_now(self) -> bool:
        with self._lock:
            if not self._closed:
                self._release()
            return True

    # -- the public operations ------------------------------------------------------------

    @classmethod
    def create_async(
        cls, stage: Stage, identifier: object, mode: object = ExportDestinationMode.EMPTY
    ) -> DestinationCreateOperation:
        """Queue the creation on the stage's population stream; ``.destination`` of the
        returned operation is usable at once (its ops run after the creation)."""
        destination = cls.reserve(stage, identifier, mode)
        try:
            stream, op_id = submit(stage, "create_export_destination_async", destination._open)
        except BaseException:
            destination._release()
            raise
        return DestinationCreateOperation(
            stage, stream, op_id, "create_export_destination_async", destination
        )

    def export(self, ordinal: object, **options: Any) -> dict[str, int]:
        """Add the stage's committed state at ``ordinal`` (in memory); the report dict."""
        self._require_open("export")
        checked = make_options(ordinal, **options)
        return raising("ExportDestination.export", lambda: self.export_options(checked))

    def export_async(self, ordinal: object, **options: Any) -> ExportOperation:
        """Queue :meth:`export` on the population stream."""
        self._require_open("export_async")
        checked = make_options(ordinal, **options)
        stream, op_id = submit(
            self._stage, "ExportDestination.export_async", lambda: self.export_options(checked)
        )
        return ExportOperation(self._stage, stream, op_id, "ExportDestination.export_async")

    def save(self) -> None:
        """Write the whole content to the identifier (atomically), keeping it open."""
        self._require_open("save")
        raising("ExportDestination.save", self.save_now)

    def save_async(self) -> DestinationOperation:
        self._require_open("save_async")
        stream, op_id = submit(self._stage, "ExportDestination.save_async", self.save_now)
        return DestinationOperation(self._stage, stream, op_id, "ExportDestination.save_async")

    def close(self) -> None:
        """Close without saving (unsaved content is discarded)."""
        if self._closed:
            return
        self._require_open("close")
        self.close_now()

    def close_async(self) -> DestinationOperation:
        """Queue the close; the destination refuses new work from now on."""
        self._require_open("close_async")
        self._closing = True

        def reopen() -> None:
            self._closing = False

        try:
            stream, op_id = submit(self._stage, "ExportDestination.close_async", self.close_now)
        except BaseException:
            self._closing = False
            raise
        return DestinationOperation(
            self._stage, stream, op_id, "ExportDestination.close_async", reopen
        )

    def __enter__(self) -> ExportDestination:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._closed:
            self.close_now()

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
        try:
            self._release()
        finally:
            warn_finalized("ExportDestination", self._handle)
