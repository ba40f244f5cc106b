"""The USD source of a stage's population: the opened USD stage, its edits and their changes.

An open makes a new source; every later edit (a reference added or removed, a reset) goes to
the source's *session layer*, never to the opened layers, so a file opened twice or shared with
other code is not modified in memory. A ``Tf.Notice`` listener collects the paths those edits
(and any other edit of the source) changed, for ``apply_usd_changes`` to republish.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .._errors import ErrorCode, OvstageError
from ._usd import Sdf, Tf, Usd

__all__ = [
    "Changes",
    "ReferenceEdit",
    "UsdSource",
    "check_prim_target",
    "open_layer",
    "parse_usda",
    "schema_registry_built",
    "usd_error_text",
]

# Set once this package opened a USD stage: USD has built its schema registry by then, so
# schema plugins registered later are not picked up.
_opened_a_stage = False


def schema_registry_built() -> bool:
    """Whether a USD stage was opened here (USD builds its schema registry on the first)."""
    return _opened_a_stage


def _note_stage_opened() -> None:
    global _opened_a_stage
    _opened_a_stage = True


_TF_ERROR = re.compile(
    r"Error in '[^']*' at line \d+ in file [^:\n]* : '(.*?)'(?=\s*(?:\n\tError in |$))", re.DOTALL
)


def usd_error_text(exc: BaseException) -> str:
    """The messages of a USD error (``Tf.ErrorException``) without the C++ source locations."""
    text = str(exc)
    found = [m.strip() for m in _TF_ERROR.findall(text)]
    return "; ".join(found) or text.strip() or type(exc).__name__


def parse_usda(text: str, name: str) -> Any:
    """A new anonymous layer holding the usda ``text``; OvstageError naming ``name`` if it does
    not parse."""
    layer = Sdf.Layer.CreateAnonymous(".usda")
    try:
        ok = layer.ImportFromString(text)
    except Exception as exc:  # Tf.ErrorException: the parser's diagnostics
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT, f"{name}: not valid usda: {usd_error_text(exc)}"
        ) from None
    if not ok:
        raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{name}: not valid usda")
    return layer


def check_file(path: str, name: str) -> None:
    """OvstageError naming ``name`` unless ``path`` is a readable file."""
    if not os.path.isfile(path):
        what = "is a directory" if os.path.isdir(path) else "does not exist"
        raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{name}: {path!r} {what}")
    if not os.access(path, os.R_OK):
        raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{name}: {path!r} is not readable")


def open_layer(path: str, name: str) -> Any:
    """The layer of the USD file at ``path``, read as it is now; OvstageError naming ``name``
    when it is missing or does not parse."""
    check_file(path, name)
    try:
        layer = Sdf.Layer.Find(path)
        if layer is not None:
            layer.Reload()  # the file may have changed since the layer was last read
        else:
            layer = Sdf.Layer.FindOrOpen(path)
    except Exception as exc:
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT, f"{name}: cannot read {path!r}: {usd_error_text(exc)}"
        ) from None
    if layer is None:
        raise OvstageError(ErrorCode.INVALID_ARGUMENT, f"{name}: cannot read {path!r}")
    return layer


def check_prim_target(target: str, name: str) -> Any:
    """``target`` as an absolute prim path (``/`` included); OvstageError naming ``name`` for a
    relative, property or variant path."""
    path = Sdf.Path(target) if Sdf.Path.IsValidPathString(target) else None
    if (
        path is None
        or not path.IsAbsolutePath()
        or not (path == Sdf.Path.absoluteRootPath or path.IsPrimPath())
        or path.ContainsPrimVariantSelection()
    ):
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{name}: {target!r} is not an absolute prim path (or '/')",
        )
    return path


@dataclass
class Changes:
    """Paths changed in the source since the last apply: ``resynced`` (structure: prims or
    properties added, removed, recomposed) and ``changed`` (values and metadata only);
    ``everything``: the whole source was replaced (an open or a reset)."""

    resynced: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    everything: bool = False

    def __bool__(self) -> bool:
        return self.everything or bool(self.resynced) or bool(self.changed)

    def merge(self, other: Changes) -> None:
        """Add ``other``'s paths to these."""
        self.resynced |= other.resynced
        self.changed |= other.changed
        self.everything = self.everything or other.everything


class _ChangeTracker:
    """Collects the paths ``Usd.Notice.ObjectsChanged`` reports for one USD stage."""

    def __init__(self, usd_stage: Any) -> None:
        self.pending = Changes()
        self._listener = Tf.Notice.Register(Usd.Notice.ObjectsChanged, self._changed, usd_stage)

    def _changed(self, notice: Any, sender: Any) -> None:
        del sender
        self.pending.resynced.update(str(p) for p in notice.GetResyncedPaths())
        self.pending.changed.update(str(p) for p in notice.GetChangedInfoOnlyPaths())

    def revoke(self) -> None:
        if self._listener is not None:
            self._listener.Revoke()
            self._listener = None


@dataclass
class ReferenceEdit:
    """What one ``add_usd_reference`` did to the session layer, to revert exactly that.

    ``kind``: ``"sublayer"`` (target ``/``), ``"reference"`` (an existing prim got a reference)
    or ``"define"`` (a prim was defined at the target; ``created_root`` is the highest prim the
    add defined, the target or one of its missing ancestors)."""

    kind: str
    layer: Any
    target: str
    reference: Any = None
    created_root: str = ""

    @property
    def republish_root(self) -> str:
        """The path whose subtree ``apply_usd_changes`` republishes after the edit."""
        return self.created_root or self.target


class UsdSource:
    """One opened USD stage with the edits made to it since it was opened."""

    def __init__(self, usd_stage: Any, layers: tuple[Any, ...] = ()) -> None:
        self.usd = usd_stage
        self._layers = list(layers)  # anonymous layers stay alive while referenced
        self.references: dict[int, ReferenceEdit] = {}
        self._tracker = _ChangeTracker(usd_stage)

    @classmethod
    def open(cls, root_layer: Any) -> UsdSource:
        """A source over a new USD stage with ``root_layer`` as root, every payload loaded."""
        _note_stage_opened()
        try:
            usd_stage = Usd.Stage.Open(root_layer, Usd.Stage.LoadAll)
        except Exception as exc:
            raise OvstageError(
                ErrorCode.INVALID_ARGUMENT, f"cannot open the USD stage: {usd_error_text(exc)}"
            ) from None
        return cls(usd_stage, (root_layer,))

    @classmethod
    def empty(cls) -> UsdSource:
        """An empty source (what ``reset_usd`` leaves)."""
        _note_stage_opened()
        return cls(Usd.Stage.CreateInMemory())

    def close(self) -> None:
        """Stop tracking changes (the source is replaced or its stage destroyed)."""
        self._tracker.revoke()

    # -- time ---------------------------------------------------------------------------

    def time_code(self, seconds: float) -> Any:
        """The USD time code of ``seconds`` (NaN: the default time)."""
        if math.isnan(seconds):
            return Usd.TimeCode.Default()
        return Usd.TimeCode(seconds * self.usd.GetTimeCodesPerSecond())

    # -- changes ------------------------------------------------------------------------

    def take_changes(self) -> Changes:
        """The changes since the last call (and forget them)."""
        changes, self._tracker.pending = self._tracker.pending, Changes()
        return changes

    def restore_changes(self, changes: Changes) -> None:
        """Put back changes an apply could not publish."""
        self._tracker.pending.merge(changes)

    def mark_everything_changed(self) -> None:
        self._tracker.pending.everything = True

    # -- references ---------------------------------------------------------------------

    def add_reference(self, layer: Any, target: Any) -> ReferenceEdit:
        """Bring ``layer`` in at ``target`` (an ``Sdf.Path``) through the session layer."""
        usd = self.usd
        session = usd.GetSessionLayer()
        self._layers.append(layer)
        if target == Sdf.Path.absoluteRootPath:
            session.subLayerPaths.append(layer.identifier)
            return ReferenceEdit("sublayer", layer, str(target))
        reference = Sdf.Reference(layer.identifier, _referenced_prim(layer))
        prim = usd.GetPrimAtPath(target)
        created_root = ""
        with Usd.EditContext(usd, session):
            if not prim.IsValid():
                created_root = str(_highest_missing(usd, target))
                prim = usd.DefinePrim(target)
            prim.GetReferences().AddReference(reference)
        if created_root:
            return ReferenceEdit("define", layer, str(target), None, created_root)
        return ReferenceEdit("reference", layer, str(target), reference)

    def remove_reference(self, edit: ReferenceEdit) -> None:
        """Revert exactly what :meth:`add_reference` did."""
        usd = self.usd
        session = usd.GetSessionLayer()
        if edit.kind == "sublayer":
            paths = list(session.subLayerPaths)
            if edit.layer.identifier in paths:
                paths.remove(edit.layer.identifier)
                session.subLayerPaths = paths
        else:
            with Usd.EditContext(usd, session):
                if edit.kind == "define":
                    usd.RemovePrim(edit.created_root)
                else:
                    usd.GetPrimAtPath(edit.target).GetReferences().RemoveReference(edit.reference)
        if edit.layer in self._layers:
            self._layers.remove(edit.layer)


def _referenced_prim(layer: Any) -> Any:
    """The prim of ``layer`` a reference brings in: its default prim, else its first root
    prim."""
    if layer.defaultPrim:
        return Sdf.Path.absoluteRootPath.AppendChild(layer.defaultPrim)
    roots = layer.rootPrims
    if not roots:
        raise OvstageError(
            ErrorCode.INVALID_ARGUMENT,
            f"the layer {layer.identifier!r} has no prim to reference (and no default prim)",
        )
    return roots[0].path


def _highest_missing(usd: Any, path: Any) -> Any:
    """The highest of ``path`` and its ancestors that the USD stage has no prim at."""
    highest = path
    parent = path.GetParentPath()
    while parent != Sdf.Path.absoluteRootPath and not usd.GetPrimAtPath(parent).IsValid():
        highest = parent
        parent = parent.GetParentPath()
    return highest
