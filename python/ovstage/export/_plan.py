"""What an export writes: the opinions chosen by its rules, projection and policies.

:func:`plan` turns the state read at one ordinal (``_select.StageState``) and the checked
options into a :class:`Plan` — prim specs, attribute values grouped by (name, USD type),
relationships, connections, API schemas, metadata, transforms and deletions — without touching
USD storage, so a failing export (a REQUIRED rule that cannot be met, a FAIL policy) leaves the
destination as it was. ``_author.py`` writes a plan.

Rules of selection, in one place:

- candidate prims: the prims of the state that the prim predicate accepts (in a change export,
  only prims with a change in the interval);
- an attribute is written when an attribute rule selects it (path and name), or, with the
  SCHEMA_DECLARED projection, when the prim's effective schemas declare it; the property
  predicate filters both. Reserved names, derived ``omni:*`` columns, metadata columns,
  ``*.connect`` columns, relationship-path columns and the source's own ``xformOp:*`` /
  ``xformOpOrder`` are never written as attributes (the transform comes from ``omni:xform``);
- the USD type: the rule's ``usd_type_name``, else the schema's declared type, else the type of
  the destination's existing attribute, else (INFER_CUSTOM_TYPE, or DERIVED_ALLOWED when the
  declared type does not fit the column) the type population maps the column from;
- a schema-declared value equal to the schema fallback is skipped unless EXPORT_DEFAULT_VALUE
  (snapshot exports only: a change export writes every changed value);
- transforms: ``omni:xform`` / ``omni:resetXformStack`` of each candidate prim become
  ``xformOp:transform`` and ``xformOpOrder`` (transform policy NONE: nothing);
- DEF mode writes a ``def`` for every candidate prim of a snapshot export (and for each prim a
  change export writes), typed from the prim rule or ``usd-prim-type``; OVER mode writes
  ``over`` specs only where an opinion goes, untyped unless a prim rule names a type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._enums import AttributeSemantic
from .._errors import ErrorCode, OvstageError
from ..population._mapping import METADATA, NEVER_PUBLISHED, RESET_XFORM_STACK, XFORM
from ..population._usd import Vt
from . import _inverse, _schemas
from ._rules import (
    ExportOptions,
    ExportProjection,
    LayerMode,
    MetadataKind,
    PropertyKind,
    RuleFlags,
    SourceApiSchemaPolicy,
    TransformPolicy,
    UnknownMetadataPolicy,
    name_matches,
    path_matches,
)
from ._select import RESERVED, SCHEMAS, Column, StageState, prim_accepts, property_accepts

__all__ = ["AttributeBatch", "Plan", "plan"]

#: What :meth:`_Planner._decide` says of one attribute of one prim: ``(destination name, USD
#: type, custom, uniform, fallback or None)``, or None when it is not written.
Decision = tuple[str, str, bool, bool, Any] | None

TRANSFORM_OP = "xformOp:transform"
OP_ORDER = "xformOpOrder"
RESET_OP = "!resetXformStack!"


@dataclass
class AttributeBatch:
    """Values of one destination attribute name and USD type on several prims."""

    name: str
    type_name: str
    custom: bool
    uniform: bool
    paths: list[str]
    values: list[Any]


@dataclass
class Plan:
    """Every opinion one export writes (see the module documentation)."""

    specifier_def: bool
    prims: dict[str, str | None] = field(default_factory=dict)  # path -> type name to set
    attributes: list[AttributeBatch] = field(default_factory=list)
    relationships: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    connections: list[tuple[str, str, str, list[Any]]] = field(default_factory=list)
    api_schemas: dict[str, list[str]] = field(default_factory=dict)
    custom_data: dict[str, dict[str, Any]] = field(default_factory=dict)
    prim_metadata: list[tuple[str, list[str], Any]] = field(default_factory=list)
    references: dict[str, list[Any]] = field(default_factory=dict)  # path -> Sdf.Reference
    layer_custom_data: list[tuple[list[str], Any]] = field(default_factory=list)
    layer_metadata: list[tuple[str, Any]] = field(default_factory=list)
    removed_properties: list[tuple[str, str]] = field(default_factory=list)
    removed_prims: list[str] = field(default_factory=list)

    def spec(self, path: str) -> None:
        self.prims.setdefault(path, None)

    def specs(self, paths: list[str]) -> None:
        """:meth:`spec` of each path."""
        add = self.prims.setdefault
        for path in paths:
            add(path, None)


def _never_attribute(name: str, column: Column) -> bool:
    return (
        name in RESERVED
        or name in NEVER_PUBLISHED
        or name.startswith("omni:")
        or name.startswith(f"{METADATA}:")
        or f":{METADATA}:" in name
        or name.endswith(".connect")
        or name.startswith("xformOp:")
        or name == OP_ORDER
        or column.ctype.semantic
        in (AttributeSemantic.RELATIONSHIP_PATH_ID, AttributeSemantic.CONNECTION_PATH_ID)
    )


def _fail(message: str) -> OvstageError:
    return OvstageError(ErrorCode.OP_FAILED, message)


class _Planner:
    def __init__(
        self,
        state: StageState,
        options: ExportOptions,
        report: dict[str, int],
        existing_type: Callable[[str, str], str | None] | None,
    ) -> None:
        self.state = state
        self.options = options
        self.report = report
        self.existing_type = existing_type
        self.plan = Plan(options.layer_mode == LayerMode.DEF)
        pred = options.prim_predicate
        self.candidates = [p for p in state.prims if prim_accepts(pred, state, p)]
        self.candidate_set = set(self.candidates)
        #: Every prim of the state is a candidate (column paths are state prims).
        self._all_candidates = len(self.candidates) == len(state.prims)
        report["prims_examined"] = len(state.prims)
        report["prims_skipped"] = len(state.prims) - len(self.candidates)
        self._decisions: dict[
            tuple[str, str, tuple[str, ...]], tuple[Decision, dict[str, int]]
        ] = {}
        self._consulted_destination = False
        self._path_free = not any(r.path for r in options.attribute_rules)

    # -- attributes ---------------------------------------------------------------------

    def _rule_for(self, name: str, path: str) -> Any:
        for rule in self.options.attribute_rules:
            if path_matches(rule.path, rule.path_match, path) and name_matches(
                rule.source_attribute_name, rule.source_attribute_name_match, name
            ):
                return rule
        return None

    def _decide(self, name: str, path: str, column: Column) -> Decision:
        """``(destination name, USD type, custom, uniform, fallback or None)`` of one
        attribute of one prim, or None when it is not written. Raises for a REQUIRED rule
        that cannot be met.

        Most prims of a stage share a few (type, schemas) pairs: a decision that depends on
        nothing else (no rule path, no existing destination type) is reused, and its report
        counts are added again for each prim."""
        type_name, schemas, _ = self.state.info(path)
        key = (name, type_name, schemas)
        cached = self._decisions.get(key) if self._path_free else None
        if cached is not None:
            decision, counts = cached
            for counter, n in counts.items():
                self.report[counter] += n
            return decision
        before = dict(self.report)
        self._consulted_destination = False
        decision = self._decide_uncached(name, path, column, type_name, schemas)
        if self._path_free and not self._consulted_destination:
            counts = {k: v - before[k] for k, v in self.report.items() if v != before[k]}
            self._decisions[key] = (decision, counts)
        return decision

    def _decide_uncached(
        self, name: str, path: str, column: Column, prim_type: str, schemas: tuple[str, ...]
    ) -> Decision:
        options = self.options
        rule = self._rule_for(name, path)
        projected = options.projection == ExportProjection.SCHEMA_DECLARED
        if rule is None and not projected:
            return None
        declared = _schemas.declared(prim_type, schemas)
        if rule is None and name not in declared.types:
            return None
        if not property_accepts(options.property_predicate, name, False, _schemas.declared_by):
            return None
        self.report["attributes_examined"] += 1
        flags = rule.flags if rule is not None else 0
        dest = (rule.destination_attribute_name if rule is not None else "") or name
        if rule is not None and rule.required_schema_name:
            declared = _schemas.declared(rule.required_schema_name, ())
        usd_type = rule.usd_type_name if rule is not None else ""
        fallback = None
        if not usd_type and dest in declared.types:
            usd_type = declared.types[dest]
            fallback = declared.fallbacks.get(dest)
            if (
                _inverse.compatible(usd_type, name, column.ctype) is not None
                and flags & RuleFlags.DERIVED_ALLOWED
            ):
                usd_type = ""
                fallback = None
        if not usd_type and self.existing_type is not None:
            self._consulted_destination = True
            usd_type = self.existing_type(path, dest) or ""
        custom = dest not in declared.types
        if not usd_type and flags & (RuleFlags.INFER_CUSTOM_TYPE | RuleFlags.DERIVED_ALLOWED):
            usd_type = _inverse.inferred_type_name(name, column.ctype) or ""
            if usd_type and custom:
                self.report["custom_attributes_inferred"] += 1
        why = (
            "no USD type (name one with usd_type_name or set INFER_CUSTOM_TYPE)"
            if not usd_type
            else _inverse.compatible(usd_type, name, column.ctype)
        )
        if why is not None:
            self.report["attributes_unsupported"] += 1
            if flags & RuleFlags.REQUIRED:
                raise _fail(f"attribute {path}.{name}: {why}")
            return None
        if flags & RuleFlags.EXPORT_DEFAULT_VALUE or self.state.changes_only:
            fallback = None
        return dest, usd_type, custom, dest in declared.uniform, fallback

    def attributes(self) -> None:
        self._unavailable()
        for name, column in self.state.columns.items():
            if not column.paths or _never_attribute(name, column):
                continue
            groups: dict[tuple[str, str, bool, bool], list[tuple[int, Any]]] = {}
            for row, decision in self._decisions_of(name, column):
                if decision is None:
                    continue
                dest, usd_type, custom, uniform, fallback = decision
                groups.setdefault((dest, usd_type, custom, uniform), []).append((row, fallback))
            for (dest, usd_type, custom, uniform), rows in groups.items():
                rows.sort()  # the column's order: prim specs are made in it
                self._attribute_batch(column, dest, usd_type, custom, uniform, rows)

    def _candidate_rows(self, column: Column) -> list[int]:
        """The rows of ``column`` whose prim is a candidate."""
        if self._all_candidates:
            return list(range(len(column.paths)))
        candidates = self.candidate_set
        return [r for r, p in enumerate(column.paths) if p in candidates]

    def _unavailable(self) -> None:
        """Attributes whose state at the ordinal could not be read are skipped and counted
        (``source_states_unavailable``); a REQUIRED rule naming one fails the export."""
        self.report["source_states_unavailable"] = len(self.state.unavailable)
        for name in sorted(self.state.unavailable):
            for rule in self.options.attribute_rules:
                if rule.flags & RuleFlags.REQUIRED and name_matches(
                    rule.source_attribute_name, rule.source_attribute_name_match, name
                ):
                    raise _fail(
                        f"attribute {name}: its state at ordinal {self.state.ordinal} "
                        "could not be read (a REQUIRED rule selects it)"
                    )

    def _decisions_of(self, name: str, column: Column) -> Iterator[tuple[int, Decision]]:
        """``(row, decision)`` of each candidate prim of ``column``.

        Without rule paths, prims of one (type, schemas) share a decision unless it asked the
        destination: one is decided, and its report counts are added for the others (a
        stage's prims are mostly of a few kinds)."""
        rows = self._candidate_rows(column)
        if not self._path_free:
            for row in rows:
                yield row, self._decide(name, column.paths[row], column)
            return
        kind_of = self.state.kinds()
        kinds: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        paths = column.paths
        for row in rows:
            kinds.setdefault(kind_of[paths[row]], []).append(row)
        for (type_name, schemas), same in kinds.items():
            decision = self._decide(name, column.paths[same[0]], column)
            cached = self._decisions.get((name, type_name, schemas))
            if cached is None:  # it asked the destination: each prim on its own
                yield same[0], decision
                for row in same[1:]:
                    yield row, self._decide(name, column.paths[row], column)
                continue
            for counter, n in cached[1].items():
                self.report[counter] += n * (len(same) - 1)
            for row in same:
                yield row, decision

    def _attribute_batch(
        self,
        column: Column,
        dest: str,
        usd_type: str,
        custom: bool,
        uniform: bool,
        rows: list[tuple[int, Any]],
    ) -> None:
        indices = [r for r, _ in rows]
        sub = Column(column.name, column.ctype, [column.paths[i] for i in indices])
        if column.ctype.is_array:
            sub.rows = [column.rows[i] for i in indices]
        else:
            sub.fixed = column.fixed_rows()[np.asarray(indices, dtype=np.intp)]
        values = _inverse.usd_values(usd_type, sub, self.state.resolver)
        paths, kept = sub.paths, values
        if any(fallback is not None for _, fallback in rows):
            paths, kept = [], []
            for (_, fallback), path, value in zip(rows, sub.paths, values, strict=True):
                if fallback is not None and value == fallback:
                    self.report["attributes_skipped"] += 1
                    continue
                paths.append(path)
                kept.append(value)
        if not paths:
            return
        self.report["attributes_exported"] += len(paths)
        self.plan.specs(paths)
        self.plan.attributes.append(AttributeBatch(dest, usd_type, custom, uniform, paths, kept))

    # -- transforms ----------------------------------------------------------------------

    def transforms(self) -> None:
        if self.options.transform_policy == TransformPolicy.NONE:
            return
        column = self.state.columns.get(XFORM)
        if column is None or not column.paths:
            return
        rows = self._candidate_rows(column)
        self.report["transforms_examined"] += len(rows)
        if not rows:
            return
        sub = Column(XFORM, column.ctype, [column.paths[i] for i in rows])
        sub.fixed = column.fixed_rows()[np.asarray(rows, dtype=np.intp)]
        matrices = _inverse.transform_values(sub)
        reset = self._reset_flags()
        # Two shared values (not one list per prim for USD to convert on every spec)
        plain, with_reset = Vt.TokenArray([TRANSFORM_OP]), Vt.TokenArray([RESET_OP, TRANSFORM_OP])
        order = [with_reset if reset.get(path, False) else plain for path in sub.paths]
        self.plan.specs(sub.paths)
        self.plan.attributes.append(
            AttributeBatch(TRANSFORM_OP, "matrix4d", False, False, sub.paths, matrices)
        )
        self.plan.attributes.append(
            AttributeBatch(OP_ORDER, "token[]", False, True, sub.paths, order)
        )
        self.report["transforms_exported"] += len(rows)

    def _reset_flags(self) -> dict[str, bool]:
        # A change export read the flag at the ordinal on every changed prim (reserved):
        # the changed column alone misses the prims whose flag did not change.
        column = self.state.reserved_column(RESET_XFORM_STACK)
        if column is None or column.fixed is None:
            return {}
        flags = np.asarray(column.fixed).reshape(-1).astype(bool).tolist()
        return dict(zip(column.paths, flags, strict=True))

    # -- prims and API schemas -----------------------------------------------------------

    def prims(self) -> None:
        options = self.options
        def_mode = options.layer_mode == LayerMode.DEF
        if def_mode and not self.state.changes_only:
            for path in self.candidates:
                self.plan.spec(path)
        for rule in options.prim_rules:
            for path in self.candidates:
                if path_matches(rule.path, rule.path_match, path):
                    self.plan.spec(path)
                    if rule.usd_type_name and def_mode:
                        self._set_type(path, rule.usd_type_name, rule.unknown_type_metadata_key)
        if def_mode:
            for path in self.plan.prims:
                if self.plan.prims[path] is None:
                    type_name = self.state.info(path)[0]
                    if type_name:
                        self._set_type(path, type_name, "")
        self.report["prims_exported"] = len(self.plan.prims)

    def _set_type(self, path: str, type_name: str, metadata_key: str) -> None:
        if _schemas.is_known_type(type_name):
            self.plan.prims[path] = type_name
            return
        policy = self.options.unknown_metadata_policy
        if policy == UnknownMetadataPolicy.FAIL:
            raise _fail(f"prim {path}: USD does not know prim type {type_name!r}")
        if policy == UnknownMetadataPolicy.PRESERVE and metadata_key:
            self.plan.custom_data.setdefault(path, {})[metadata_key] = type_name
            self.report["unknown_metadata_preserved"] += 1
        self.plan.prims[path] = ""

    def api_schemas(self) -> None:
        options = self.options
        recorded = options.source_api_schema_policy == SourceApiSchemaPolicy.APPLY_RECORDED
        if recorded and self.state.changes_only:
            changed = self.state.columns.get(SCHEMAS)
            recorded_paths = set(changed.paths) if changed is not None else set()
        else:
            recorded_paths = self.candidate_set if recorded else set()
        for path in self.candidates:
            names: list[str] = []
            for rule in options.api_schema_rules:
                if path_matches(rule.path, rule.path_match, path):
                    schema = rule.schema_name + (
                        f":{rule.instance_name}" if rule.instance_name else ""
                    )
                    self.report["api_schemas_examined"] += 1
                    if not _schemas.is_known_api(schema):
                        self.report["api_schemas_skipped"] += 1
                        if rule.flags & RuleFlags.REQUIRED:
                            raise _fail(f"prim {path}: USD does not know API schema {schema!r}")
                        continue
                    names.append(schema)
            if path in recorded_paths:
                names.extend(self._recorded(path))
            if names:
                self.plan.spec(path)
                unique = list(dict.fromkeys(names))
                self.plan.api_schemas[path] = unique
                self.report["api_schemas_applied"] += len(unique)

    def _recorded(self, path: str) -> list[str]:
        out, unknown = [], []
        schemas = self.state.info(path)[1]
        for schema in schemas:
            self.report["api_schemas_examined"] += 1
            if _schemas.is_known_api(schema):
                out.append(schema)
            elif any(s.startswith(schema + ":") for s in schemas):
                self.report["api_schemas_skipped"] += 1  # the family of an instance listed too
            else:
                unknown.append(schema)
                self.report["api_schemas_skipped"] += 1
        if unknown:
            policy = self.options.unknown_metadata_policy
            if policy == UnknownMetadataPolicy.FAIL:
                raise _fail(f"prim {path}: unknown applied API schemas {unknown}")
            if policy == UnknownMetadataPolicy.PRESERVE:
                from ._rules import UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY as key

                self.plan.custom_data.setdefault(path, {})[key] = unknown
                self.report["unknown_metadata_preserved"] += 1
        return out

    # -- relationships and connections ---------------------------------------------------

    def property_edges(self) -> None:
        for rule in self.options.property_rules:
            is_rel = rule.property_kind in (
                PropertyKind.RELATIONSHIP,
                PropertyKind.MATERIAL_BINDING,
            )
            if rule.property_kind == PropertyKind.MATERIAL_BINDING:
                dest = "material:binding"
            else:
                dest = rule.destination_property_name or rule.source_property_name
            source = rule.source_property_name if is_rel else f"{rule.source_property_name}.connect"
            semantic = (
                AttributeSemantic.RELATIONSHIP_PATH_ID
                if is_rel
                else AttributeSemantic.CONNECTION_PATH_ID
            )
            column = self.state.columns.get(source)
            index = column.index() if column is not None and column.paths else {}
            for path in self.candidates:
                if not path_matches(rule.path, rule.path_match, path):
                    continue
                if not property_accepts(
                    self.options.property_predicate, dest, is_rel, _schemas.declared_by
                ):
                    continue
                self.report["property_edges_examined"] += 1
                row = index.get(path)
                if row is None or column is None or column.ctype.semantic != semantic:
                    self.report["property_edges_skipped"] += 1
                    if rule.flags & RuleFlags.REQUIRED and not self.state.changes_only:
                        raise _fail(f"prim {path}: no {semantic.name} column {source!r}")
                    continue
                ids = column.rows[row] if column.ctype.is_array else column.fixed_rows()[row]
                self.plan.spec(path)
                self.report["property_edges_exported"] += 1
                if is_rel:
                    self.plan.relationships.append(
                        (path, dest, _inverse.path_targets(ids, self.state.resolver))
                    )
                    if rule.property_kind == PropertyKind.MATERIAL_BINDING:
                        self.plan.api_schemas.setdefault(path, [])
                        if "MaterialBindingAPI" not in self.plan.api_schemas[path]:
                            self.plan.api_schemas[path].append("MaterialBindingAPI")
                else:
                    usd_type = rule.usd_type_name or self._connection_type(path, dest)
                    if not usd_type:
                        self.report["property_edges_unsupported"] += 1
                        self.report["property_edges_exported"] -= 1
                        if rule.flags & RuleFlags.REQUIRED:
                            raise _fail(f"connection {path}.{dest}: no USD type (usd_type_name)")
                        continue
                    self.plan.connections.append(
                        (
                            path,
                            dest,
                            usd_type,
                            _inverse.connection_targets(ids, self.state.resolver),
                        )
                    )

    def _connection_type(self, path: str, dest: str) -> str:
        type_name, schemas, _ = self.state.info(path)
        declared = _schemas.declared(type_name, schemas).types.get(dest)
        if declared:
            return declared
        existing = self.existing_type(path, dest) if self.existing_type is not None else None
        if existing:
            return existing
        column = self.state.columns.get(dest)
        if column is not None and column.paths:
            return _inverse.inferred_type_name(dest, column.ctype) or ""
        return ""

    # -- metadata ------------------------------------------------------------------------

    def metadata(self, prim_fields: frozenset[str], layer_fields: frozenset[str]) -> None:
        for rule in self.options.metadata_rules:
            source = rule.source_metadata_name
            if not source.startswith(f"{METADATA}:"):
                source = f"{METADATA}:{source}"
            dest = rule.destination_metadata_name or source[len(METADATA) + 1 :]
            parts = dest.split(":")
            column = self.state.columns.get(source)
            index = column.index() if column is not None and column.paths else {}
            if rule.metadata_kind == MetadataKind.REFERENCES:
                self._references(rule, column, index)
                continue
            if rule.metadata_kind in (MetadataKind.LAYER_CUSTOM_DATA, MetadataKind.LAYER_STANDARD):
                self._layer_metadata(rule, column, index, parts, layer_fields)
                continue
            for path, held, row in self._metadata_rows(rule, column, index):
                value = _inverse.metadata_value(held, row, self.state.resolver)
                if parts[0] in prim_fields:
                    self.plan.prim_metadata.append((path, parts, value))
                elif not self._unknown_metadata(path, dest, value):
                    continue
                self.plan.spec(path)
                self.report["metadata_exported"] += 1

    def _metadata_rows(
        self, rule: Any, column: Column | None, index: dict[str, int]
    ) -> Iterator[tuple[str, Column, int]]:
        """The candidate prims ``rule`` selects that hold a value in ``column``, with their
        rows; counts each selected prim as examined and each without a value as skipped."""
        for path in self.candidates:
            if not path_matches(rule.path, rule.path_match, path):
                continue
            self.report["metadata_examined"] += 1
            row = index.get(path)
            if row is None or column is None:
                self.report["metadata_skipped"] += 1
                continue
            yield path, column, row

    def _references(self, rule: Any, column: Column | None, index: dict[str, int]) -> None:
        """A REFERENCES rule: each selected prim with a value gets the references it names,
        prepended (several rules on one prim add up, in rule order)."""
        for path, held, row in self._metadata_rows(rule, column, index):
            try:
                refs = _inverse.references(_inverse.metadata_value(held, row, self.state.resolver))
            except _inverse.Unsupported as exc:
                self.report["metadata_unsupported"] += 1
                if rule.flags & RuleFlags.REQUIRED:
                    raise _fail(f"prim {path}: {held.name}: {exc}") from None
                continue
            known = self.plan.references.setdefault(path, [])
            known += [r for r in refs if r not in known]
            self.plan.spec(path)
            self.report["metadata_exported"] += 1

    def _unknown_metadata(self, path: str, dest: str, value: Any) -> bool:
        """Apply the unknown-metadata policy; whether something was kept."""
        policy = self.options.unknown_metadata_policy
        if policy == UnknownMetadataPolicy.FAIL:
            raise _fail(f"{path}: USD has no metadata field for {dest!r}")
        if policy == UnknownMetadataPolicy.DROP:
            self.report["metadata_skipped"] += 1
            return False
        self.plan.custom_data.setdefault(path, {})[dest] = value
        self.report["unknown_metadata_preserved"] += 1
        return True

    def _layer_metadata(
        self,
        rule: Any,
        column: Column | None,
        index: dict[str, int],
        parts: list[str],
        layer_fields: frozenset[str],
    ) -> None:
        self.report["metadata_examined"] += 1
        row = index.get("/")
        if row is None or column is None:
            self.report["metadata_skipped"] += 1
            return
        value = _inverse.metadata_value(column, row, self.state.resolver)
        if rule.metadata_kind == MetadataKind.LAYER_CUSTOM_DATA:
            keys = parts[1:] if parts[0] == "customLayerData" and len(parts) > 1 else parts
            self.plan.layer_custom_data.append((keys, value))
        elif len(parts) == 1 and parts[0] in layer_fields:
            self.plan.layer_metadata.append((parts[0], value))
        else:
            policy = self.options.unknown_metadata_policy
            if policy == UnknownMetadataPolicy.FAIL:
                raise _fail(f"USD has no layer metadata field {':'.join(parts)!r}")
            if policy == UnknownMetadataPolicy.DROP:
                self.report["metadata_skipped"] += 1
                return
            self.plan.layer_custom_data.append((parts, value))
            self.report["unknown_metadata_preserved"] += 1
        self.report["metadata_exported"] += 1

    # -- deletions (change exports) --------------------------------------------------------

    def deletions(self) -> None:
        for name, column in self.state.columns.items():
            for path in column.deleted:
                if name == XFORM:
                    self.plan.removed_properties += [(path, TRANSFORM_OP), (path, OP_ORDER)]
                    continue
                rule = self._rule_for(name, path)
                dest = (rule.destination_attribute_name if rule is not None else "") or name
                self.plan.removed_properties.append((path, dest))
        self.plan.removed_prims = list(self.state.deleted_prims)


def plan(
    state: StageState,
    options: ExportOptions,
    report: dict[str, int],
    existing_type: Callable[[str, str], str | None] | None,
    prim_fields: frozenset[str],
    layer_fields: frozenset[str],
) -> Plan:
    """The opinions one export writes (see the module documentation).

    ``existing_type(path, name)``: the type name of the destination's attribute, if it has one
    (None: the destination is empty).
    ``prim_fields`` / ``layer_fields``: the metadata fields USD knows on prims and layers.
    """
    planner = _Planner(state, options, report, existing_type)
    planner.attributes()
    planner.transforms()
    planner.property_edges()
    planner.metadata(prim_fields, layer_fields)
    planner.api_schemas()
    planner.prims()
    if state.changes_only:
        planner.deletions()
    return planner.plan
