"""``ovstage.population``: populate a stage from USD (OpenUSD from the ``usd-core`` package).

Install the extra to use it: ``pip install 'ovstage-go[usd]'``. Without it the module still
imports: ``available()`` is False and every call raises ``OvstageError(NOT_SUPPORTED)``
saying what to install.

Every call is an op of the stage's population stream: ops run one at a time in submission
order on a worker thread of the stage (stopped when the stage is destroyed). Each open starts
a new stream: an op issued before the latest open can no longer be waited on (INVALID_HANDLE).
The ``_async`` forms return a :class:`Operation` at once, or raise ``OvstageError`` when the
call is refused (bad arguments, a destroyed stage, an ordinal at or below the stage's write
floor, a call that needs a populated stage on one that never was); nothing ran then and the
same ordinal may be used again. The blocking forms wait for the op (and every earlier one).

A population reads everything it will write from USD first and only then writes it, through
the stage's ordinary write path at the op's ordinal, one batched write per column. Opens
*merge*: they never remove what an earlier open wrote. ``time`` is in seconds (turned into a
USD time code with the scene's ``timeCodesPerSecond``); :data:`DEFAULT_TIME` (NaN) samples
USD's default time.

``progress=`` (the open and repopulate calls): a callable ``progress(done, total)`` called on
the population worker thread with the number of prims read so far and the number in scope,
and once with ``(total, total)`` when the op's writes are done. An exception it raises fails
the op (before anything was written). Long operations also log at INFO level on the
``ovstage.population`` logger (Python's ``logging``).

Export (stage -> USD) lives in ``ovstage.export`` (docs/export.md); its public names are
re-exported here, as the reference names them.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .._enums import PopulationDomain
from .._errors import ErrorCode, OvstageError
from .._guards import as_uint64
from .._lib import call, native
from . import _usd
from ._descs import (
    Desc,
    PrimPredicate,
    PrimPredicateKind,
    PropertyPredicate,
    PropertyPredicateKind,
    Selector,
    as_domains,
    normalize_descs,
    validate_paths,
)
from ._operation import Operation, last_error, set_last_error

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = [
    "DEFAULT_TIME",
    "Desc",
    "Operation",
    "PopulationDomain",
    "PrimPredicate",
    "PrimPredicateKind",
    "PropertyPredicate",
    "PropertyPredicateKind",
    "Selector",
    "add_usd_reference",
    "add_usd_reference_async",
    "add_usd_reference_from_string",
    "add_usd_reference_from_string_async",
    "apply_usd_changes",
    "apply_usd_changes_async",
    "available",
    "descs_available",
    "is_default_time",
    "last_error",
    "open_usd",
    "open_usd_async",
    "open_usd_from_string",
    "open_usd_from_string_async",
    "open_usd_from_string_with_desc",
    "open_usd_from_string_with_desc_async",
    "open_usd_with_desc",
    "open_usd_with_desc_async",
    "register_usd_schemas",
    "remove_usd",
    "remove_usd_async",
    "repopulate_usd_with_desc",
    "repopulate_usd_with_desc_async",
    "reset_usd",
    "reset_usd_async",
    "update_from_usd_time",
    "update_from_usd_time_async",
]

#: Passing it as ``time`` samples USD's default time code. NaN: test with
#: :func:`is_default_time`, never with ``==``.
DEFAULT_TIME: float = math.nan

#: ``progress(done, total)``: see the module documentation.
Progress = Callable[[int, int], object]

_RENDERING = PopulationDomain.RENDERING


def available() -> bool:
    """Whether USD population works here (usd-core can be imported)."""
    return _usd.AVAILABLE


def descs_available() -> bool:
    """Whether population descriptions (``*_with_desc``, repopulate) work here."""
    return _usd.AVAILABLE


def is_default_time(time: float) -> bool:
    """Whether ``time`` is :data:`DEFAULT_TIME` (NaN)."""
    return math.isnan(time)


# The name refusals and failures use: a blocking form's while it enqueues, else the async
# form's own.
_calling = threading.local()


@contextlib.contextmanager
def _blocking(name: str) -> Iterator[None]:
    _calling.name = name
    try:
        yield
    finally:
        _calling.name = None


def _name(async_name: str) -> str:
    """The name of the public call being made (read once per call)."""
    name = getattr(_calling, "name", None)
    _calling.name = None
    return name or async_name


# -- argument checks (run before anything is queued) -----------------------------------------


def _refuse(code: int, message: str) -> NoReturn:
    set_last_error(message)
    raise OvstageError(code, message)


def _require_usd(what: str) -> None:
    set_last_error("")
    if not _usd.AVAILABLE:
        _refuse(ErrorCode.NOT_SUPPORTED, f"population.{what}: {_usd.REASON}")


def _live_stage(stage: Stage, what: str) -> int:
    from .._stage import Stage

    if not isinstance(stage, Stage):
        raise TypeError(f"{what}: stage must be an ovstage.Stage, got {type(stage).__name__}")
    try:
        return stage._require_live(f"population.{what}")
    except OvstageError as exc:
        _refuse(exc.code, exc.message)


def _ordinal(stage: Stage, ordinal: object, what: str) -> int:
    """A population ordinal: a uint64 above the stage's write floor."""
    if isinstance(ordinal, bool):
        raise TypeError(f"{what}: ordinal must be an integer, got bool")
    value = as_uint64(ordinal, "ordinal")
    floor = call(native.GlobalWriteFloor, stage._id)
    if value <= floor:
        _refuse(
            ErrorCode.WRITE_FLOOR_VIOLATION,
            f"population.{what}: ordinal {value} is at or below the stage's write floor {floor}",
        )
    return value


def _time(time: object, what: str) -> float:
    if isinstance(time, (bool, str, bytes)):
        raise TypeError(f"{what}: time must be a number of seconds, got {type(time).__name__}")
    try:
        return float(time)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(
            f"{what}: time must be a number of seconds, got {type(time).__name__}"
        ) from None


def _descs(descs: object) -> tuple[Desc, ...]:
    """One Desc or a sequence of them (TypeError), with usable path arguments
    (OvstageError(INVALID_ARGUMENT) naming the desc and selector)."""
    items = normalize_descs(descs)
    validate_paths(items)
    return items


def _file_path(path: object, name: str, what: str) -> str:
    if isinstance(path, (str, bytes, os.PathLike)):
        text = os.fsdecode(path)
        if text:
            return text
        raise ValueError(f"{what}: {name} must not be empty")
    raise TypeError(
        f"{what}: {name} must be a str, bytes or os.PathLike, got {type(path).__name__}"
    )


def _usda(text: object, name: str, what: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{what}: {name} must be a str of usda text, got {type(text).__name__}")
    return text


def _progress(progress: object, what: str) -> Progress | None:
    if progress is not None and not callable(progress):
        raise TypeError(f"{what}: progress must be callable or None, got {type(progress).__name__}")
    return progress


def _checked(what: str, check: Callable[[], Any]) -> Any:
    """Run argument checks; a refusal is recorded as this thread's last error."""
    try:
        return check()
    except OvstageError as exc:
        set_last_error(exc.message)
        raise
    except (TypeError, ValueError) as exc:
        set_last_error(f"population.{what}: {exc}")
        raise


def _submit(
    stage: Stage, what: str, run: Callable[[], Any], value: Any = True, *, replaces: bool = False
) -> Operation:
    """Submit one op to the stage's stream; ``replaces`` (opens): it starts a new stream."""
    from ._state import state_of

    state = state_of(stage)
    try:
        op_id = state.stream.submit(what, run, replaces=replaces)
    except OvstageError as exc:
        _refuse(exc.code, exc.message)
    return Operation(stage, ErrorCode.OK, op_id, value=value, name=what)


def _populated_state(stage: Stage, what: str) -> Any:
    """The stage's state; NOT_FOUND unless an open of it was accepted."""
    from ._state import existing_state

    state = existing_state(stage)
    if state is None or not state.open_accepted:
        _refuse(ErrorCode.NOT_FOUND, f"population.{what}: the stage was never populated from USD")
    return state


# -- opens -----------------------------------------------------------------------------------


def _open_async(
    what: str,
    stage: Stage,
    *,
    path: object = None,
    usda: object = None,
    ordinal: object,
    time: object,
    descs: tuple[Desc, ...] | None = None,
    domains: object = None,
    progress: object = None,
) -> Operation:
    _require_usd(what)
    from ._source import check_file, parse_usda
    from ._state import state_of

    def check() -> tuple[Any, str | None, int, float, tuple[Desc, ...], Progress | None]:
        _live_stage(stage, what)
        seconds = _time(time, what)
        chosen = descs if descs is not None else (Desc(domains=as_domains(domains, what)),)
        callback = _progress(progress, what)
        layer, file = None, None
        if usda is not None:
            layer = parse_usda(_usda(usda, "usda", what), "usda")
        else:
            file = _file_path(path, "path", what)
            check_file(file, "path")
        return layer, file, _ordinal(stage, ordinal, what), seconds, chosen, callback

    layer, file, value, seconds, chosen, callback = _checked(what, check)
    state = state_of(stage)
    state.open_accepted = True  # before the op can run: its progress callback may call more
    return _submit(
        stage,
        what,
        lambda: state.run_open(layer, file, value, seconds, chosen, what, callback),
        replaces=True,  # an open replaces the USD source, and with it the op stream
    )


def open_usd_async(
    stage: Stage,
    path: str | os.PathLike[str],
    ordinal: int,
    time: float = DEFAULT_TIME,
    domains: PopulationDomain | int = _RENDERING,
    *,
    progress: Progress | None = None,
) -> Operation:
    """Open the USD file at ``path`` as the stage's USD source and populate ``domains`` at
    ``ordinal``, sampled at ``time`` seconds (merging into what the stage holds)."""
    return _open_async(
        _name("open_usd_async"),
        stage,
        path=path,
        ordinal=ordinal,
        time=time,
        domains=domains,
        progress=progress,
    )


def open_usd(
    stage: Stage,
    path: str | os.PathLike[str],
    ordinal: int,
    time: float = DEFAULT_TIME,
    domains: PopulationDomain | int = _RENDERING,
    *,
    progress: Progress | None = None,
) -> None:
    """Blocking :func:`open_usd_async`."""
    with _blocking("open_usd"):
        op = open_usd_async(stage, path, ordinal, time, domains, progress=progress)
    op.wait()


def open_usd_from_string_async(
    stage: Stage,
    usda: str,
    ordinal: int,
    time: float = DEFAULT_TIME,
    domains: PopulationDomain | int = _RENDERING,
    *,
    progress: Progress | None = None,
) -> Operation:
    """:func:`open_usd_async` from usda text (parsed before this returns)."""
    return _open_async(
        _name("open_usd_from_string_async"),
        stage,
        usda=usda,
        ordinal=ordinal,
        time=time,
        domains=domains,
        progress=progress,
    )


def open_usd_from_string(
    stage: Stage,
    usda: str,
    ordinal: int,
    time: float = DEFAULT_TIME,
    domains: PopulationDomain | int = _RENDERING,
    *,
    progress: Progress | None = None,
) -> None:
    """Blocking :func:`open_usd_from_string_async`."""
    with _blocking("open_usd_from_string"):
        op = open_usd_from_string_async(stage, usda, ordinal, time, domains, progress=progress)
    op.wait()


def open_usd_with_desc_async(
    stage: Stage,
    path: str | os.PathLike[str],
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> Operation:
    """Open the USD file at ``path`` and populate what ``descs`` select (one ``Desc`` or a
    sequence of them)."""
    what = _name("open_usd_with_desc_async")
    _require_usd(what)
    chosen = _checked(what, lambda: _descs(descs))
    return _open_async(
        what, stage, path=path, ordinal=ordinal, time=time, descs=chosen, progress=progress
    )


def open_usd_with_desc(
    stage: Stage,
    path: str | os.PathLike[str],
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> None:
    """Blocking :func:`open_usd_with_desc_async`."""
    with _blocking("open_usd_with_desc"):
        op = open_usd_with_desc_async(stage, path, ordinal, time, descs, progress=progress)
    op.wait()


def open_usd_from_string_with_desc_async(
    stage: Stage,
    usda: str,
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> Operation:
    """:func:`open_usd_with_desc_async` from usda text."""
    what = _name("open_usd_from_string_with_desc_async")
    _require_usd(what)
    chosen = _checked(what, lambda: _descs(descs))
    return _open_async(
        what, stage, usda=usda, ordinal=ordinal, time=time, descs=chosen, progress=progress
    )


def open_usd_from_string_with_desc(
    stage: Stage,
    usda: str,
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> None:
    """Blocking :func:`open_usd_from_string_with_desc_async`."""
    with _blocking("open_usd_from_string_with_desc"):
        op = open_usd_from_string_with_desc_async(
            stage, usda, ordinal, time, descs, progress=progress
        )
    op.wait()


def repopulate_usd_with_desc_async(
    stage: Stage,
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> Operation:
    """Populate the loaded USD source again (nothing reopened) with ``descs``, which become
    the scope of later change and time ops. Each selected attribute is re-read at ``time`` and
    rewritten; nothing is deleted. NOT_FOUND if the stage was never populated."""
    what = _name("repopulate_usd_with_desc_async")
    _require_usd(what)

    def check() -> tuple[int, float, tuple[Desc, ...], Progress | None]:
        _live_stage(stage, what)
        chosen = _descs(descs)
        seconds = _time(time, what)
        callback = _progress(progress, what)
        _populated_state(stage, what)
        return _ordinal(stage, ordinal, what), seconds, chosen, callback

    value, seconds, chosen, callback = _checked(what, check)
    state = _populated_state(stage, what)
    return _submit(
        stage, what, lambda: state.run_repopulate(value, seconds, chosen, what, callback)
    )


def repopulate_usd_with_desc(
    stage: Stage,
    ordinal: int,
    time: float,
    descs: Desc | Sequence[Desc],
    *,
    progress: Progress | None = None,
) -> None:
    """Blocking :func:`repopulate_usd_with_desc_async`."""
    with _blocking("repopulate_usd_with_desc"):
        op = repopulate_usd_with_desc_async(stage, ordinal, time, descs, progress=progress)
    op.wait()


# -- references, reset ---------------------------------------------------------------------


def _add_reference_async(
    what: str, stage: Stage, *, file: object = None, usda: object = None, target_path: object
) -> Operation:
    _require_usd(what)
    from ._source import check_file, check_prim_target, parse_usda

    def check() -> tuple[Any, str | None, Any]:
        _live_stage(stage, what)
        if not isinstance(target_path, str):
            raise TypeError(f"{what}: target_path must be a str, got {type(target_path).__name__}")
        target = check_prim_target(target_path, "target_path")
        layer, path = None, None
        if usda is not None:
            layer = parse_usda(_usda(usda, "ref_str", what), "ref_str")
        else:
            path = _file_path(file, "ref_file_path", what)
            check_file(path, "ref_file_path")
        _populated_state(stage, what)
        return layer, path, target

    layer, path, target = _checked(what, check)
    state = _populated_state(stage, what)
    handle = state.reserve_handle()
    return _submit(
        stage,
        what,
        lambda: state.run_add_reference(handle, layer, path, target, what),
        value=handle,
    )


def add_usd_reference_async(
    stage: Stage, ref_file_path: str | os.PathLike[str], target_path: str
) -> Operation:
    """Bring the USD file in at ``target_path``: ``/`` merges its top-level prims into the
    stage (as a sublayer), an existing prim gets a reference to it, a new path is defined
    (with its missing ancestors) and references it. ``wait()`` returns the reference handle.
    The stage sees the edit at the next :func:`apply_usd_changes`."""
    return _add_reference_async(
        _name("add_usd_reference_async"), stage, file=ref_file_path, target_path=target_path
    )


def add_usd_reference(stage: Stage, ref_file_path: str | os.PathLike[str], target_path: str) -> int:
    """Blocking :func:`add_usd_reference_async`: the reference handle."""
    with _blocking("add_usd_reference"):
        op = add_usd_reference_async(stage, ref_file_path, target_path)
    handle: int = op.wait()
    return handle


def add_usd_reference_from_string_async(stage: Stage, ref_str: str, target_path: str) -> Operation:
    """:func:`add_usd_reference_async` for a layer given as usda text."""
    return _add_reference_async(
        _name("add_usd_reference_from_string_async"), stage, usda=ref_str, target_path=target_path
    )


def add_usd_reference_from_string(stage: Stage, ref_str: str, target_path: str) -> int:
    """Blocking :func:`add_usd_reference_from_string_async`: the reference handle."""
    with _blocking("add_usd_reference_from_string"):
        op = add_usd_reference_from_string_async(stage, ref_str, target_path)
    handle: int = op.wait()
    return handle


def remove_usd_async(stage: Stage, handle: int) -> Operation:
    """Revert exactly what the add of ``handle`` did (a prim it defined goes with its
    subtree, a reference it added is removed, a ``/`` merge drops its sublayer). Removing a
    handle twice, or one whose add failed, fails when the op runs."""
    what = _name("remove_usd_async")
    _require_usd(what)

    def check() -> int:
        _live_stage(stage, what)
        if isinstance(handle, bool):
            raise TypeError(f"{what}: handle must be an integer, got bool")
        value = as_uint64(handle, "handle")
        state = _populated_state(stage, what)
        if not state.issued_handle(value):
            _refuse(
                ErrorCode.INVALID_ARGUMENT,
                f"population.{what}: handle {value} was never issued for this stage",
            )
        return value

    value = _checked(what, check)
    state = _populated_state(stage, what)
    return _submit(stage, what, lambda: state.run_remove_reference(value, what))


def remove_usd(stage: Stage, handle: int) -> None:
    """Blocking :func:`remove_usd_async`."""
    with _blocking("remove_usd"):
        op = remove_usd_async(stage, handle)
    op.wait()


def reset_usd_async(stage: Stage) -> Operation:
    """Empty the USD source (references included). The stage keeps its content until
    :func:`apply_usd_changes` removes what USD no longer has."""
    what = _name("reset_usd_async")
    _require_usd(what)
    _checked(what, lambda: (_live_stage(stage, what), _populated_state(stage, what)))
    state = _populated_state(stage, what)
    return _submit(stage, what, lambda: state.run_reset(what))


def reset_usd(stage: Stage) -> None:
    """Blocking :func:`reset_usd_async`."""
    with _blocking("reset_usd"):
        op = reset_usd_async(stage)
    op.wait()


# -- time and changes --------------------------------------------------------------------------


def update_from_usd_time_async(stage: Stage, ordinal: int, time: float) -> Operation:
    """Re-sample every time-varying property in the population scope at ``time`` seconds and
    write it at ``ordinal`` (the same ``time`` again rewrites them too). With RENDERING among
    the scope's domains, pending USD edits are published by the same op."""
    what = _name("update_from_usd_time_async")
    _require_usd(what)

    def check() -> tuple[int, float]:
        _live_stage(stage, what)
        seconds = _time(time, what)
        _populated_state(stage, what)
        return _ordinal(stage, ordinal, what), seconds

    value, seconds = _checked(what, check)
    state = _populated_state(stage, what)
    return _submit(stage, what, lambda: state.run_apply_time(value, seconds, what))


def update_from_usd_time(stage: Stage, ordinal: int, time: float) -> None:
    """Blocking :func:`update_from_usd_time_async`."""
    with _blocking("update_from_usd_time"):
        op = update_from_usd_time_async(stage, ordinal, time)
    op.wait()


def apply_usd_changes_async(stage: Stage, ordinal: int) -> Operation:
    """Publish the USD edits made since the previous call (a reset included) at ``ordinal``:
    republished prims get every selected attribute written, even unchanged ones; what USD
    no longer has is removed. A no-op when nothing changed."""
    what = _name("apply_usd_changes_async")
    _require_usd(what)

    def check() -> int:
        _live_stage(stage, what)
        _populated_state(stage, what)
        return _ordinal(stage, ordinal, what)

    value = _checked(what, check)
    state = _populated_state(stage, what)
    return _submit(stage, what, lambda: state.run_apply_changes(value, what))


def apply_usd_changes(stage: Stage, ordinal: int) -> None:
    """Blocking :func:`apply_usd_changes_async`."""
    with _blocking("apply_usd_changes"):
        op = apply_usd_changes_async(stage, ordinal)
    op.wait()


# -- schema plugins ----------------------------------------------------------------------------


def register_usd_schemas(paths: str | bytes | os.PathLike[str] | Iterable[Any]) -> None:
    """Register USD schema plugins: each entry names a ``plugInfo.json`` or a directory
    holding one. Every entry is checked before anything is registered: an empty entry is
    INVALID_ARGUMENT, one that points at no readable descriptor NOT_FOUND. Registering after
    USD built its schema registry (once a population opened a USD stage in this process)
    registers the plugins anyway but raises OP_FAILED: their schemas are not picked up.
    Process-wide and irreversible; an empty list does nothing."""
    what = "register_usd_schemas"
    _require_usd(what)
    from ._source import schema_registry_built

    def check() -> list[str]:
        entries: list[Any]
        if isinstance(paths, (str, bytes, os.PathLike)):
            entries = [paths]
        elif isinstance(paths, Iterable):
            entries = list(paths)
        else:
            raise TypeError(
                f"{what}: paths must be a path or an iterable of paths, got {type(paths).__name__}"
            )
        files = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, (str, bytes, os.PathLike)):
                raise TypeError(
                    f"{what}: paths[{i}] must be a str, bytes or os.PathLike, "
                    f"got {type(entry).__name__}"
                )
            text = os.fsdecode(entry)
            if not text:
                _refuse(ErrorCode.INVALID_ARGUMENT, f"population.{what}: paths[{i}] is empty")
            file = os.path.join(text, "plugInfo.json") if os.path.isdir(text) else text
            if not os.path.isfile(file) or not os.access(file, os.R_OK):
                _refuse(
                    ErrorCode.NOT_FOUND,
                    f"population.{what}: paths[{i}] ({text!r}) names no readable plugInfo.json",
                )
            files.append(file)
        return files

    files = _checked(what, check)
    if not files:
        return
    late = schema_registry_built()
    from pxr import Plug

    Plug.Registry().RegisterPlugins(files)
    if late:
        _refuse(
            ErrorCode.OP_FAILED,
            f"population.{what}: too late: USD already built its schema registry in this "
            "process (a USD stage was opened); the plugins are registered but their schemas "
            "are not available",
        )


# -- export: implemented in ovstage.export, named here as the reference does -------------

from .. import export as _export  # noqa: E402
from ..export import *  # noqa: E402, F403 (every public name of ovstage.export)
from ..export._constants import *  # noqa: E402, F403 (again: mypy misses them above)

__all__ += _export.__all__
