"""USD export (stage -> USD): author a stage's committed state into USD files, layers, stages.

The public names are re-exported by ``ovstage.population`` (where the reference puts them);
this package holds the implementation, one concern per module (see docs/export.md):

``_rules`` enums, constants, rule records, checked options; ``_select`` the sealed state read
at one ordinal and the predicates; ``_schemas`` schema lookups; ``_inverse`` column values back
to USD values; ``_plan`` which opinions an export writes; ``_author`` writing them into an
``Sdf.Layer``; ``_destination`` reusable destinations and atomic saves; ``_operation`` async
exports on the population op stream.

Without usd-core, :func:`export_available` is False and every call raises
``OvstageError(NOT_SUPPORTED)`` naming the extra to install (``ovstage-go[usd]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ErrorCode, OvstageError
from ..population import _usd
from ..population._descs import PrimPredicate, PropertyPredicate
from . import _constants
from ._constants import *  # noqa: F403 (the OVSTAGE_POPULATION_EXPORT_* constants)
from ._destination import ExportDestination, export_into_layer, raising
from ._guard import check_call as _check
from ._operation import (
    DestinationCreateOperation,
    DestinationOperation,
    ExportOperation,
    submit,
)
from ._rules import (
    ExportDestinationMode,
    ExportProjection,
    ExportSelection,
    LayerMode,
    MetadataKind,
    NameMatch,
    PathMatch,
    PropertyKind,
    RuleFlags,
    SourceApiSchemaPolicy,
    TransformPolicy,
    UnknownMetadataPolicy,
    make_options,
)

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = [
    "DestinationCreateOperation",
    "DestinationOperation",
    "ExportDestination",
    "ExportDestinationMode",
    "ExportOperation",
    "ExportProjection",
    "ExportSelection",
    "LayerMode",
    "MetadataKind",
    "NameMatch",
    "PathMatch",
    "PropertyKind",
    "RuleFlags",
    "SourceApiSchemaPolicy",
    "TransformPolicy",
    "UnknownMetadataPolicy",
    "create_export_destination",
    "create_export_destination_async",
    "export_available",
    "export_to_destination",
    "export_to_destination_async",
    "export_to_usd_file",
    "export_to_usd_file_async",
    "export_to_usd_layer",
    "export_to_usd_layer_async",
    "export_to_usd_stage",
    "export_to_usd_stage_async",
    "export_typed_hierarchy_to_usd_file",
    "export_typed_hierarchy_to_usd_file_async",
    "export_typed_hierarchy_to_usd_layer",
    "export_typed_hierarchy_to_usd_layer_async",
]
__all__ += _constants.__all__


def export_available() -> bool:
    """Whether USD export works here (usd-core can be imported)."""
    return _usd.AVAILABLE


# -- layers and stages -------------------------------------------------------------------


def _layer_identifier(usd_layer: object) -> str:
    if isinstance(usd_layer, str):
        return usd_layer
    identifier = getattr(usd_layer, "identifier", None)
    if isinstance(identifier, str):
        return identifier
    getter = getattr(usd_layer, "GetIdentifier", None)
    if callable(getter):
        return str(getter())
    raise TypeError(
        "usd_layer must be a layer identifier str or an object with .identifier or "
        f".GetIdentifier(), got {type(usd_layer).__name__}"
    )


def _stage_identifier(usd_stage: object) -> str:
    if isinstance(usd_stage, str):
        return usd_stage
    getter = getattr(usd_stage, "GetRootLayer", None)
    if callable(getter):
        return str(getter().identifier)
    raise TypeError(
        "usd_stage must be a root layer identifier str or an object with .GetRootLayer(), "
        f"got {type(usd_stage).__name__}"
    )


def _find_layer(identifier: str) -> Any:
    """The open layer with ``identifier``, else the layer opened from storage."""
    Sdf = _usd.Sdf
    layer = Sdf.Layer.Find(identifier)
    if not layer:
        try:
            layer = Sdf.Layer.FindOrOpen(identifier)
        except Exception:
            layer = None
    if not layer:
        raise OvstageError(
            ErrorCode.OP_FAILED, f"usd_layer {identifier!r}: no such layer can be opened"
        )
    return layer


def _stage_layer(identifier: str) -> tuple[Any, Any]:
    """``(Usd.Stage, the layer of its default edit target)`` for a root layer identifier."""
    root = _find_layer(identifier)
    try:
        usd_stage = _usd.Usd.Stage.Open(root)
    except Exception as exc:
        raise OvstageError(
            ErrorCode.OP_FAILED, f"usd_stage {identifier!r}: cannot be opened ({exc})"
        ) from None
    return usd_stage, usd_stage.GetEditTarget().GetLayer()


def export_to_usd_layer(
    stage: Stage, usd_layer: object, ordinal: object, **options: Any
) -> dict[str, int]:
    """Export into a USD layer in place (no save, no rollback); the report dict."""
    what = "export_to_usd_layer"
    _check(stage, what)
    identifier = _layer_identifier(usd_layer)
    checked = make_options(ordinal, **options)
    return raising(what, lambda: export_into_layer(stage, _find_layer(identifier), checked))


def export_to_usd_layer_async(
    stage: Stage, usd_layer: object, ordinal: object, **options: Any
) -> ExportOperation:
    """Queue :func:`export_to_usd_layer`; the layer is resolved (and held) now."""
    what = "export_to_usd_layer_async"
    _check(stage, what)
    checked = make_options(ordinal, **options)
    layer = raising(what, lambda: _find_layer(_layer_identifier(usd_layer)))
    stream, op_id = submit(stage, what, lambda: export_into_layer(stage, layer, checked))
    return ExportOperation(stage, stream, op_id, what)


def export_to_usd_stage(
    stage: Stage, usd_stage: object, ordinal: object, **options: Any
) -> dict[str, int]:
    """Export into the root layer (the default edit target) of the USD stage opened from
    ``usd_stage``'s root layer identifier; the report dict."""
    what = "export_to_usd_stage"
    _check(stage, what)
    identifier = _stage_identifier(usd_stage)
    checked = make_options(ordinal, **options)

    def run() -> dict[str, int]:
        opened, layer = _stage_layer(identifier)
        report = export_into_layer(stage, layer, checked)
        del opened
        return report

    return raising(what, run)


def export_to_usd_stage_async(
    stage: Stage, usd_stage: object, ordinal: object, **options: Any
) -> ExportOperation:
    """Queue :func:`export_to_usd_stage`; the stage is opened (and held) now."""
    what = "export_to_usd_stage_async"
    _check(stage, what)
    checked = make_options(ordinal, **options)
    opened, layer = raising(what, lambda: _stage_layer(_stage_identifier(usd_stage)))

    def run() -> dict[str, int]:
        del_ = opened  # held until the op ran
        report = export_into_layer(stage, layer, checked)
        del del_
        return report

    stream, op_id = submit(stage, what, run)
    return ExportOperation(stage, stream, op_id, what)


# -- files and destinations ----------------------------------------------------------------


def _file_once(stage: Stage, identifier: str, checked: Any) -> dict[str, int]:
    """create(EMPTY) -> export -> save -> close: the stored file is replaced only when the
    save succeeds."""
    destination = ExportDestination.create(stage, identifier, ExportDestinationMode.EMPTY)
    try:
        report = destination.export_options(checked)
        destination.save_now()
        return report
    finally:
        destination.close_now()


def export_to_usd_file(
    stage: Stage, identifier: object, ordinal: object, **options: Any
) -> dict[str, int]:
    """Export into a new layer and save it to file ``identifier`` (atomically); the report."""
    what = "export_to_usd_file"
    _check(stage, what)
    text = str(identifier)
    checked = make_options(ordinal, **options)
    return raising(what, lambda: _file_once(stage, text, checked))


def export_to_usd_file_async(
    stage: Stage, identifier: object, ordinal: object, **options: Any
) -> ExportOperation:
    """Queue :func:`export_to_usd_file` on the stage's population stream."""
    what = "export_to_usd_file_async"
    _check(stage, what)
    text = str(identifier)
    checked = make_options(ordinal, **options)
    stream, op_id = submit(stage, what, lambda: _file_once(stage, text, checked))
    return ExportOperation(stage, stream, op_id, what)


def create_export_destination(
    stage: Stage, identifier: object, mode: object = ExportDestinationMode.EMPTY
) -> ExportDestination:
    """A reusable destination for file ``identifier`` (raises on failure)."""
    what = "create_export_destination"
    _check(stage, what)
    return raising(what, lambda: ExportDestination.create(stage, identifier, mode))


def create_export_destination_async(
    stage: Stage, identifier: object, mode: object = ExportDestinationMode.EMPTY
) -> DestinationCreateOperation:
    """Queue a destination's creation; ``.destination`` is usable at once."""
    what = "create_export_destination_async"
    _check(stage, what)
    return raising(what, lambda: ExportDestination.create_async(stage, identifier, mode))


def _destination_of(stage: Stage, destination: object, what: str) -> ExportDestination:
    if not isinstance(destination, ExportDestination):
        raise TypeError(
            f"{what}: destination must be an ExportDestination, got {type(destination).__name__}"
        )
    if destination.stage is not stage:
        raise ValueError(f"{what}: the destination belongs to another stage")
    return destination


def export_to_destination(
    stage: Stage, destination: object, ordinal: object, **options: Any
) -> dict[str, int]:
    """:meth:`ExportDestination.export` of a destination of ``stage``."""
    what = "export_to_destination"
    _check(stage, what)
    return _destination_of(stage, destination, what).export(ordinal, **options)


def export_to_destination_async(
    stage: Stage, destination: object, ordinal: object, **options: Any
) -> ExportOperation:
    """:meth:`ExportDestination.export_async` of a destination of ``stage``."""
    what = "export_to_destination_async"
    _check(stage, what)
    return _destination_of(stage, destination, what).export_async(ordinal, **options)


# -- typed hierarchy -----------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _typed_hierarchy_options(
    root_path: object,
    prim_predicate: object,
    property_predicate: object,
    include_custom_namespaces: object,
    transform_policy: object,
    unknown_metadata_policy: object,
) -> dict[str, Any]:
    if not isinstance(root_path, str):
        raise TypeError(f"root_path must be a str, got {type(root_path).__name__}")
    if not root_path.startswith("/"):
        raise ValueError(f"root_path {root_path!r} must be an absolute path (start with '/')")
    under = PrimPredicate.is_under_path(root_path)
    if prim_predicate is not None:
        if not isinstance(prim_predicate, PrimPredicate):
            raise TypeError(
                f"prim_predicate must be a PrimPredicate, got {type(prim_predicate).__name__}"
            )
        under = PrimPredicate.and_(under, prim_predicate)
    if property_predicate is not None and not isinstance(property_predicate, PropertyPredicate):
        raise TypeError(
            "property_predicate must be a PropertyPredicate, got "
            f"{type(property_predicate).__name__}"
        )
    rules = []
    if include_custom_namespaces is not None:
        if isinstance(include_custom_namespaces, str) or not isinstance(
            include_custom_namespaces, Sequence
        ):
            raise TypeError("include_custom_namespaces must be a sequence of str")
        for i, namespace in enumerate(include_custom_namespaces):
            if not isinstance(namespace, str):
                raise TypeError(
                    f"include_custom_namespaces[{i}] must be a str, got {type(namespace).__name__}"
                )
            segments = namespace.split(":")
            if not all(_IDENTIFIER.match(s) for s in segments) or segments[0] in ("omni", "usd"):
                raise ValueError(
                    f"include_custom_namespaces[{i}]: {namespace!r} is not a custom namespace "
                    "(':'-separated USD identifiers, not starting with omni or usd)"
                )
            rules.append(
                {
                    "source_attribute_name": f"{namespace}:*",
                    "source_attribute_name_match": NameMatch.GLOB,
                    "flags": RuleFlags.INFER_CUSTOM_TYPE,
                }
            )
    return {
        "layer_mode": LayerMode.DEF,
        "source_api_schema_policy": SourceApiSchemaPolicy.APPLY_RECORDED,
        "projection": ExportProjection.SCHEMA_DECLARED,
        "prim_predicate": under,
        "property_predicate": property_predicate,
        "attribute_rules": rules,
        "transform_policy": transform_policy,
        "unknown_metadata_policy": unknown_metadata_policy,
    }


def _typed_hierarchy_form(export: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    """A typed-hierarchy export over ``export`` (a layer or file export), named ``name``."""

    def typed(
        stage: Stage,
        target: object,
        root_path: object,
        ordinal: object,
        *,
        prim_predicate: object = None,
        property_predicate: object = None,
        include_custom_namespaces: object = None,
        transform_policy: object = TransformPolicy.USD_XFORM_OP,
        unknown_metadata_policy: object = UnknownMetadataPolicy.DROP,
    ) -> Any:
        _check(stage, name)
        options = _typed_hierarchy_options(
            root_path,
            prim_predicate,
            property_predicate,
            include_custom_namespaces,
            transform_policy,
            unknown_metadata_policy,
        )
        return export(stage, target, ordinal, **options)

    typed.__name__ = typed.__qualname__ = name
    typed.__doc__ = doc
    return typed


export_typed_hierarchy_to_usd_layer = _typed_hierarchy_form(
    export_to_usd_layer,
    "export_typed_hierarchy_to_usd_layer",
    """Export the prims under ``root_path`` into a layer as typed ``def`` prims with their
    recorded API schemas and schema-declared attributes (plus the custom namespaces named,
    their types inferred); the report dict.""",
)
export_typed_hierarchy_to_usd_layer_async = _typed_hierarchy_form(
    export_to_usd_layer_async,
    "export_typed_hierarchy_to_usd_layer_async",
    "Queue :func:`export_typed_hierarchy_to_usd_layer`.",
)
export_typed_hierarchy_to_usd_file = _typed_hierarchy_form(
    export_to_usd_file,
    "export_typed_hierarchy_to_usd_file",
    ":func:`export_typed_hierarchy_to_usd_layer` into a new file (saved atomically).",
)
export_typed_hierarchy_to_usd_file_async = _typed_hierarchy_form(
    export_to_usd_file_async,
    "export_typed_hierarchy_to_usd_file_async",
    "Queue :func:`export_typed_hierarchy_to_usd_file`.",
)
