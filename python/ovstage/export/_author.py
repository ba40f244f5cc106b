"""Writing a :class:`~._plan.Plan` into an ``Sdf.Layer``.

All edits of one export happen inside one ``Sdf.ChangeBlock``, so USD sends one change
notice instead of one per spec. Specs are made with the ``Sdf`` API directly (no ``Usd``
stage, no composition); prim specs are looked up or made once per prim, attribute specs once
per (prim, name) and then only their default value is set.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..population._usd import Sdf, Tf
from ._plan import AttributeBatch, Plan

__all__ = ["author", "existing_type_of", "layer_fields", "prim_fields"]


@cache
def prim_fields() -> frozenset[str]:
    """The metadata fields USD registers for prim specs."""
    layer = Sdf.Layer.CreateAnonymous()
    spec = Sdf.CreatePrimInLayer(layer, "/X")
    return frozenset(spec.GetMetaDataInfoKeys())


@cache
def layer_fields() -> frozenset[str]:
    """The metadata fields USD registers for layers (the pseudo-root)."""
    layer = Sdf.Layer.CreateAnonymous()  # held: the spec needs its layer alive
    return frozenset(layer.pseudoRoot.GetMetaDataInfoKeys())


def existing_type_of(layer: Any) -> Any:
    """``existing_type(path, name)`` over ``layer``: the type name of its attribute spec."""

    def existing_type(path: str, name: str) -> str | None:
        spec = layer.GetAttributeAtPath(f"{path}.{name}")
        return str(spec.typeName) if spec else None

    return existing_type


class _Specs:
    """Prim specs of one layer, looked up or made once each. ``made``: the paths this export
    created (they had no properties before it)."""

    def __init__(self, layer: Any, specifier_def: bool) -> None:
        self.layer = layer
        self.specifier_def = specifier_def
        self.of: dict[str, Any] = {}
        self.made: set[str] = set()
        self._empty = layer.empty  # nothing to look up: every spec is new

    def get(self, path: str) -> Any:
        spec = self.of.get(path)
        if spec is None:
            spec = None if self._empty else self.layer.GetPrimAtPath(path)
            if not spec:
                spec = Sdf.CreatePrimInLayer(self.layer, path)
                self.made.add(path)
                if self.specifier_def:
                    self._define_upwards(spec)
            elif self.specifier_def and spec.specifier != Sdf.SpecifierDef:
                spec.specifier = Sdf.SpecifierDef
            self.of[path] = spec
        return spec

    def _define_upwards(self, spec: Any) -> None:
        while spec and spec.path != Sdf.Path.absoluteRootPath:
            if spec.specifier == Sdf.SpecifierDef:
                return
            spec.specifier = Sdf.SpecifierDef
            spec = spec.nameParent


def _set_nested(container: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        inner = container.get(key)
        if not isinstance(inner, dict):
            inner = container[key] = {}
        container = inner
    container[keys[-1]] = value


def author(layer: Any, plan: Plan) -> None:
    """Write ``plan`` into ``layer`` (one change block)."""
    specs = _Specs(layer, plan.specifier_def)
    with Sdf.ChangeBlock():
        _remove(layer, plan)
        for path, type_name in plan.prims.items():
            spec = specs.get(path)
            if type_name is not None:
                spec.typeName = type_name
        for batch in plan.attributes:
            _attribute_batch(specs, batch)
        for path, name, targets in plan.relationships:
            prim = specs.get(path)
            rel = prim.relationships.get(name)
            if rel is None:
                rel = Sdf.RelationshipSpec(prim, name, False)
            rel.targetPathList.explicitItems = targets
        for path, name, type_name, sources in plan.connections:
            prim = specs.get(path)
            attr = prim.attributes.get(name)
            if attr is None:
                attr = Sdf.AttributeSpec(prim, name, Sdf.ValueTypeNames.Find(type_name))
            attr.connectionPathList.explicitItems = sources
        for path, schemas in plan.api_schemas.items():
            if not schemas:
                continue
            prim = specs.get(path)
            current = prim.GetInfo("apiSchemas") if prim.HasInfo("apiSchemas") else None
            prepended = list(current.prependedItems) if current is not None else []
            merged = prepended + [s for s in schemas if s not in prepended]
            prim.SetInfo("apiSchemas", Sdf.TokenListOp.Create(prependedItems=merged))
        for path, parts, value in plan.prim_metadata:
            prim = specs.get(path)
            if len(parts) == 1:
                prim.SetInfo(parts[0], value)
            else:
                top = dict(prim.GetInfo(parts[0])) if prim.HasInfo(parts[0]) else {}
                _set_nested(top, parts[1:], value)
                prim.SetInfo(parts[0], top)
        for path, refs in plan.references.items():
            specs.get(path).referenceList.prependedItems = refs
        for path, entries in plan.custom_data.items():
            prim = specs.get(path)
            data = dict(prim.customData)
            for key, value in entries.items():
                _set_nested(data, key.split(":"), value)
            prim.customData = data
        if plan.layer_custom_data:
            data = dict(layer.customLayerData)
            for keys, value in plan.layer_custom_data:
                _set_nested(data, keys, value)
            layer.customLayerData = data
        for name, value in plan.layer_metadata:
            layer.pseudoRoot.SetInfo(name, value)


def _attribute_batch(specs: _Specs, batch: AttributeBatch) -> None:
    """One batch's values. A prim this export made has no attribute yet, so its spec is made
    without a lookup (the cost of a full export is mostly these Sdf calls); a name made twice
    on one prim (two rules naming one destination) falls back to the lookup."""
    value_type = Sdf.ValueTypeNames.Find(batch.type_name)
    variability = Sdf.VariabilityUniform if batch.uniform else Sdf.VariabilityVarying
    name, custom, made = batch.name, batch.custom, specs.made
    all_made = made.issuperset(batch.paths)
    of = specs.of  # plan.prims holds every path a batch writes: all made or looked up above
    for path, value in zip(batch.paths, batch.values, strict=True):
        prim = of[path]
        if all_made or path in made:
            try:
                Sdf.AttributeSpec(prim, name, value_type, variability, custom).default = value
                continue
            except Tf.ErrorException:
                pass
        attr = prim.attributes.get(name)
        if attr is not None and attr.typeName != value_type:
            prim.RemoveProperty(attr)
            attr = None
        if attr is None:
            attr = Sdf.AttributeSpec(prim, name, value_type, variability, custom)
        attr.default = value


def _remove(layer: Any, plan: Plan) -> None:
    """What a change export saw deleted: in DEF mode the property spec goes; in OVER mode an
    attribute the layer has gets a value block, so the layer over its source still says
    "no value" (as the stage does) instead of revealing the source's opinion."""
    for path, name in plan.removed_properties:
        prop = layer.GetPropertyAtPath(f"{path}.{name}")
        if not prop:
            continue
        if plan.specifier_def or not isinstance(prop, Sdf.AttributeSpec):
            prop.owner.RemoveProperty(prop)
        else:
            prop.default = Sdf.ValueBlock()
    for path in plan.removed_prims:
        prim = layer.GetPrimAtPath(path)
        if prim:
            parent = prim.nameParent or layer.pseudoRoot
            del parent.nameChildren[prim.name]
