"""``ovstage.population``: USD population and export.

Population and export need an OpenUSD runtime; this build has none. The module keeps the
reference's names so code written for it imports unchanged: the data classes and enums
(``Desc``, ``Selector``, ``PrimPredicate``, ``PropertyPredicate``, the kind enums,
``PopulationDomain``) construct normally, ``available()``/``descs_available()`` are False,
and every operation raises ``OvstageError(NOT_SUPPORTED)`` saying USD population is not in
this build.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .._enums import PopulationDomain
from .._errors import TIMEOUT_INFINITE, ErrorCode, OvstageError
from ._descs import (
    Desc,
    PrimPredicate,
    PrimPredicateKind,
    PropertyPredicate,
    PropertyPredicateKind,
    Selector,
)

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = [
    "Desc",
    "ExportDestination",
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
    "export_to_usd_file",
    "export_to_usd_file_async",
    "export_typed_hierarchy_to_usd_file",
    "export_typed_hierarchy_to_usd_file_async",
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
    "reset_usd",
    "reset_usd_async",
    "update_from_usd_time",
    "update_from_usd_time_async",
]

#: Why every operation of this module raises.
UNAVAILABLE_MESSAGE = (
    "USD population is not in this build: ovstage-go has no OpenUSD runtime; author prims "
    "with Stage.write_attribute instead"
)

_last = threading.local()


def _unsupported(what: str) -> NoReturn:
    message = f"population.{what}: {UNAVAILABLE_MESSAGE}"
    _last.message = message
    raise OvstageError(ErrorCode.NOT_SUPPORTED, message)


def available() -> bool:
    """Whether USD population is available (never, in this build)."""
    return False


def descs_available() -> bool:
    """Whether population descriptions (selectors, predicates) are supported (never)."""
    return False


def last_error() -> str:
    """The latest population error on this thread ("" if none)."""
    return getattr(_last, "message", "")


class Operation:
    """A population operation (reference: ``wait()`` returns the payload or True, None on
    TIMEOUT). No population operation can be enqueued in this build."""

    def __init__(self, stage: Stage, op_id: int) -> None:
        self.stage = stage
        self.op_id = op_id

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> Any:
        """Raises NOT_SUPPORTED."""
        del timeout
        _unsupported("Operation.wait")


class ExportDestination:
    """A reusable USD export destination. Opening one raises NOT_SUPPORTED."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs
        _unsupported("ExportDestination")


# -- operations ----------------------------------------------------------------------------

_RENDERING = PopulationDomain.RENDERING


def open_usd_async(
    stage: Stage,
    path: str,
    ordinal: int = 1,
    time_code: float = math.nan,
    domains: PopulationDomain | int = _RENDERING,
) -> Operation:
    """Replace the USD content with a file and populate it. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_async")


def open_usd(
    stage: Stage,
    path: str,
    ordinal: int = 1,
    time_code: float = math.nan,
    domains: PopulationDomain | int = _RENDERING,
) -> Any:
    """Blocking :func:`open_usd_async`. Raises NOT_SUPPORTED."""
    _unsupported("open_usd")


def open_usd_from_string_async(
    stage: Stage,
    usda: str,
    ordinal: int = 1,
    time_code: float = math.nan,
    domains: PopulationDomain | int = _RENDERING,
) -> Operation:
    """Replace the USD content with a usda string and populate it. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_from_string_async")


def open_usd_from_string(
    stage: Stage,
    usda: str,
    ordinal: int = 1,
    time_code: float = math.nan,
    domains: PopulationDomain | int = _RENDERING,
) -> Any:
    """Blocking :func:`open_usd_from_string_async`. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_from_string")


def open_usd_with_desc_async(
    stage: Stage, path: str, ordinal: int, time_code: float, descs: Sequence[Desc]
) -> Operation:
    """Open a file and populate what ``descs`` select. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_with_desc_async")


def open_usd_with_desc(
    stage: Stage, path: str, ordinal: int, time_code: float, descs: Sequence[Desc]
) -> Any:
    """Blocking :func:`open_usd_with_desc_async`. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_with_desc")


def open_usd_from_string_with_desc_async(
    stage: Stage, usda: str, ordinal: int, time_code: float, descs: Sequence[Desc]
) -> Operation:
    """Open a usda string and populate what ``descs`` select. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_from_string_with_desc_async")


def open_usd_from_string_with_desc(
    stage: Stage, usda: str, ordinal: int, time_code: float, descs: Sequence[Desc]
) -> Any:
    """Blocking :func:`open_usd_from_string_with_desc_async`. Raises NOT_SUPPORTED."""
    _unsupported("open_usd_from_string_with_desc")


def add_usd_reference_async(stage: Stage, file: str, target_path: str) -> Operation:
    """Add a USD reference to the source. Raises NOT_SUPPORTED."""
    _unsupported("add_usd_reference_async")


def add_usd_reference(stage: Stage, file: str, target_path: str) -> int:
    """Blocking :func:`add_usd_reference_async` (returns a reference handle). Raises
    NOT_SUPPORTED."""
    _unsupported("add_usd_reference")


def add_usd_reference_from_string_async(stage: Stage, usda: str, target_path: str) -> Operation:
    """Add a USD reference from a usda string. Raises NOT_SUPPORTED."""
    _unsupported("add_usd_reference_from_string_async")


def add_usd_reference_from_string(stage: Stage, usda: str, target_path: str) -> int:
    """Blocking :func:`add_usd_reference_from_string_async`. Raises NOT_SUPPORTED."""
    _unsupported("add_usd_reference_from_string")


def remove_usd_async(stage: Stage, handle: int) -> Operation:
    """Remove a USD reference. Raises NOT_SUPPORTED."""
    _unsupported("remove_usd_async")


def remove_usd(stage: Stage, handle: int) -> Any:
    """Blocking :func:`remove_usd_async`. Raises NOT_SUPPORTED."""
    _unsupported("remove_usd")


def reset_usd_async(stage: Stage) -> Operation:
    """Reset the USD source. Raises NOT_SUPPORTED."""
    _unsupported("reset_usd_async")


def reset_usd(stage: Stage) -> Any:
    """Blocking :func:`reset_usd_async`. Raises NOT_SUPPORTED."""
    _unsupported("reset_usd")


def update_from_usd_time_async(stage: Stage, ordinal: int, time_code: float) -> Operation:
    """Re-sample time-sampled values at ``time_code`` seconds. Raises NOT_SUPPORTED."""
    _unsupported("update_from_usd_time_async")


def update_from_usd_time(stage: Stage, ordinal: int, time_code: float) -> Any:
    """Blocking :func:`update_from_usd_time_async`. Raises NOT_SUPPORTED."""
    _unsupported("update_from_usd_time")


def apply_usd_changes_async(stage: Stage, ordinal: int = 1) -> Operation:
    """Propagate pending USD edits. Raises NOT_SUPPORTED."""
    _unsupported("apply_usd_changes_async")


def apply_usd_changes(stage: Stage, ordinal: int = 1) -> Any:
    """Blocking :func:`apply_usd_changes_async`. Raises NOT_SUPPORTED."""
    _unsupported("apply_usd_changes")


def register_usd_schemas(paths: Sequence[str]) -> None:
    """Register extra USD schema plugins. Raises NOT_SUPPORTED."""
    _unsupported("register_usd_schemas")


def export_to_usd_file_async(stage: Stage, *args: Any, **kwargs: Any) -> Any:
    """Export committed state to a USD file. Raises NOT_SUPPORTED."""
    _unsupported("export_to_usd_file_async")


def export_to_usd_file(stage: Stage, *args: Any, **kwargs: Any) -> Any:
    """Blocking :func:`export_to_usd_file_async`. Raises NOT_SUPPORTED."""
    _unsupported("export_to_usd_file")


def export_typed_hierarchy_to_usd_file_async(stage: Stage, *args: Any, **kwargs: Any) -> Any:
    """Export the typed prim hierarchy to a USD file. Raises NOT_SUPPORTED."""
    _unsupported("export_typed_hierarchy_to_usd_file_async")


def export_typed_hierarchy_to_usd_file(stage: Stage, *args: Any, **kwargs: Any) -> Any:
    """Blocking :func:`export_typed_hierarchy_to_usd_file_async`. Raises NOT_SUPPORTED."""
    _unsupported("export_typed_hierarchy_to_usd_file")
