"""Read and map groups: views of the native ``ovstage_read_group_t`` / ``ovstage_map_group_t``
(their ctypes mirrors are in ``_abi.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._abi import MapGroupRaw, ReadGroupRaw
from ._dlpack import DLDeviceType, DLTensor, ManagedDLTensor
from ._enums import AttributeSemantic
from ._errors import ErrorCode, OvstageError
from ._guards import as_bool_flag, as_index
from ._lib import exporter, native
from ._warn import warn_finalized

if TYPE_CHECKING:
    from ._handles import Map
    from ._stage import Stage

__all__ = ["AttributeMeta", "MapGroup", "MapGroupRaw", "ReadGroup", "ReadGroupRaw"]

# The native calls of the read-group fast paths (ReadGroup.dlpack, ReadGroup.release).
_export_group_view = native._native.pybind_ExportGroupView
_release_group = native._native.pybind_ReleaseGroup


def _device_label(device_type: int, device_id: int) -> str:
    if device_type == DLDeviceType.kDLCUDA:
        return f"cuda:{device_id}"
    name = DLDeviceType.name_of(device_type)
    return f"{name}:{device_id}" if name else f"device type {device_type}:{device_id}"


class AttributeMeta:
    """Floor in effect when the group was produced, and the column's layout generation."""

    __slots__ = ("attribute_write_floor_ordinal", "layout_generation")

    def __init__(
        self, attribute_write_floor_ordinal: Any, layout_generation: int | None = None
    ) -> None:
        if layout_generation is None:
            # AttributeMeta(raw): copy the fields of an ``ovstage_attribute_meta_t``.
            raw = attribute_write_floor_ordinal
            attribute_write_floor_ordinal = raw.attribute_write_floor_ordinal
            layout_generation = raw.layout_generation
        self.attribute_write_floor_ordinal = int(attribute_write_floor_ordinal)
        self.layout_generation = int(layout_generation)

    def __repr__(self) -> str:
        return (
            f"AttributeMeta(attribute_write_floor_ordinal={self.attribute_write_floor_ordinal}, "
            f"layout_generation={self.layout_generation})"
        )


class _GroupBase:
    """Accessors shared by read and map groups (the ``prims``/``data``/``meta`` fields)."""

    raw: ReadGroupRaw | MapGroupRaw
    _stage: Stage | None
    _released: bool
    _readonly_default = True

    def _check(self) -> ReadGroupRaw | MapGroupRaw:
        if self._released:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE, f"{type(self).__name__} was already released"
            )
        if self._stage is not None and self._stage._destroyed:
            # Destroy released the group and freed the struct ``raw`` points into.
            raise OvstageError(
                ErrorCode.INVALID_HANDLE,
                f"{type(self).__name__} accessor called after Stage was destroyed",
            )
        return self.raw

    def _group_id(self) -> int:
        raise NotImplementedError

    @property
    def released(self) -> bool:
        """Whether the group was released (read groups) or committed (map groups)."""
        return self._released

    def _mark_released(self) -> None:
        self._released = True

    @property
    def meta(self) -> AttributeMeta:
        """Floor and layout generation when the group was produced."""
        m = self._check().meta
        return AttributeMeta(int(m.attribute_write_floor_ordinal), int(m.layout_generation))

    @property
    def prim_list(self) -> int:
        """Path-list handle (a borrow: never release it)."""
        return int(self._check().prims.list)

    @property
    def prim_offset(self) -> int:
        return int(self._check().prims.offset)

    @property
    def prim_count(self) -> int:
        return int(self._check().prims.count)

    @property
    def has_prim_index_map(self) -> bool:
        return bool(self._check().prims.index_map)

    def prim_index(self, local: int) -> int:
        """List-relative index of local prim ``local``."""
        local = as_index(local, "local")
        prims = self._check().prims
        if not 0 <= local < prims.count:
            raise IndexError(f"local prim {local} is outside [0, {prims.count})")
        if prims.index_map:
            return int(prims.index_map[local])
        return int(prims.offset) + local

    @property
    def tensor_count(self) -> int:
        return int(self._check().data.tensor_count)

    @property
    def data_count(self) -> int:
        return int(self._check().data.count)

    @property
    def has_data_index_map(self) -> bool:
        return bool(self._check().data.index_map)

    def data_row_index(self, local: int) -> int:
        """Data row (tensor index for arrays) of logical element ``local``: ``local`` itself
        when the group has no data index map."""
        local = as_index(local, "local")
        data = self._check().data
        if not data.index_map:
            return local
        if not 0 <= local < data.count:
            raise IndexError(f"logical element {local} is outside [0, {data.count})")
        return int(data.index_map[local])

    def tensor(self, i: int) -> DLTensor:
        """Raw ``DLTensor`` ``i`` in the typed layout: scalar lanes and component axes, e.g.
        ``(N,)``, ``(N, 3)``, ``(N, 4, 4)`` for a MATRIX column (valid until release; copy
        what you keep). ``typed_tensor_to_write`` turns it back into a write's lane layout."""
        i = as_index(i, "tensor index")
        data = self._check().data
        if not 0 <= i < data.tensor_count:
            raise IndexError(f"tensor index {i} is outside [0, {data.tensor_count})")
        tensor: DLTensor = data.tensors[i]
        return tensor

    def dlpack(self, i: int = 0, *, readonly: bool | None = None) -> ManagedDLTensor:
        """A DLPack exporter for tensor ``i`` (for ``np/torch.from_dlpack``); the export keeps
        its storage alive on its own.

        ``readonly=False`` on a read group exports a private copy of the tensor (made on its
        device when the export is created, flagged ``IS_COPIED``): writing into it never
        changes the sealed data. Map groups export their staging itself (writable).
        """
        self.tensor(i)
        flag = self._readonly_default if readonly is None else as_bool_flag(readonly, "readonly")
        if self._stage is None:
            raise OvstageError(
                ErrorCode.NOT_SUPPORTED, "a group built without a Stage cannot export"
            )
        addr = self._stage._export_group_tensor(self._group_id(), i, flag)
        return ManagedDLTensor._from_native(addr, flag, exporter)

    def array(self, i: int = 0) -> np.ndarray:
        """Zero-copy numpy view of tensor ``i`` in its typed shape (``tensor(i)`` shape, e.g.
        ``(N, 3)``; ``view.reshape(-1)`` for flat indexing); CPU tensors only. bfloat16 comes
        back as its raw ``uint16`` bits (numpy has no bfloat16)."""
        self._require_host(i)
        return self.dlpack(i).numpy()

    def _require_host(self, i: int) -> None:
        """Raise ``NotImplementedError`` unless tensor ``i`` is host memory (GPU columns)."""
        device = self.tensor(i).device
        device_type = device.device_type.value
        if device_type != DLDeviceType.kDLCPU:
            raise NotImplementedError(
                f"array() views host memory; tensor {i} is on "
                f"{_device_label(device_type, device.device_id)}: use dlpack({i}) with "
                "torch.from_dlpack or cupy.from_dlpack"
            )


class ReadGroup(_GroupBase):
    """One attribute's values for some of the query's prims.

    Local prim ``k`` is path-list entry ``prim_index(k)``; its value is row ``k`` of the
    tensor, or row ``data_row_index(k)`` when ``has_data_index_map``. ``array(i)`` and
    ``dlpack(i)`` are zero-copy read-only views that keep the storage alive on their own: they
    stay valid after ``release()``, after the Stage is destroyed and after later writes.
    Sealed data never changes: ``dlpack(i, readonly=False)`` is a private copy.
    """

    def __init__(self, raw: ReadGroupRaw, stage: Stage | None = None) -> None:
        self.raw = raw
        self._stage = stage
        self._released = False

    # -- lifetime -------------------------------------------------------------------------

    def _group_id(self) -> int:
        return int(self._check().read_group_id)

    def _live_stage(self) -> Stage | None:
        """The stage, when the group's fast paths may call it directly: the group is not
        released and its stage is live (otherwise the general path reports why)."""
        stage = self._stage
        if self._released or stage is None or stage._destroyed or _lib._forked_child:
            return None
        return stage

    def release(self) -> None:
        """Release the group (OvstageError(INVALID_HANDLE) if already released, or if the
        group was built without a stage: nothing owns it)."""
        stage = self._live_stage()
        if stage is not None:
            try:
                _release_group(stage._id, self.raw.read_group_id)
            except RuntimeError:
                pass  # the general path below reports it
            else:
                self._released = True
                return
        self._check()
        if self._stage is None:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE, "ReadGroup built without a stage cannot be released"
            )
        self._stage.release_group(self)

    def __enter__(self) -> ReadGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._released and self._stage is not None:
            self.release()

    def __del__(self) -> None:
        if self._released or self._stage is None or self._stage._destroyed:
            return
        try:
            group_id = int(self.raw.read_group_id)  # read before release frees the struct
            self.release()
        except Exception:
            return
        warn_finalized("ReadGroup", group_id)

    # -- fields ---------------------------------------------------------------------------

    def dlpack(self, i: int = 0, *, readonly: bool | None = None) -> ManagedDLTensor:
        """A DLPack exporter for tensor ``i`` (for ``np/torch.from_dlpack``); the export keeps
        its storage alive on its own.

        ``readonly=False`` exports a private copy of the tensor (made on its device when the
        export is created, flagged ``IS_COPIED``): writing into it never changes the sealed
        data.
        """
        stage = self._live_stage()
        if stage is not None and i.__class__ is int and readonly is None:
            raw = self.raw  # the read-only export of a tensor in range: one native call
            if 0 <= i < raw.data.tensor_count:
                try:
                    addr = _export_group_view(stage._id, raw.read_group_id, i)
                except RuntimeError:
                    pass  # the general path below reports it
                else:
                    return ManagedDLTensor._from_native(addr, True, exporter)
        return super().dlpack(i, readonly=readonly)

    def tensor(self, i: int) -> DLTensor:
        """Raw ``DLTensor`` ``i`` of sealed data (valid until release; copy what you keep).
        ``dltensor_to_numpy(tensor, readonly=True)`` views it; a writable decode is a copy."""
        tensor = super().tensor(i)
        tensor._read_only = True
        return tensor

    @property
    def id(self) -> int:
        """The read group id."""
        return self._group_id()

    @property
    def attribute(self) -> int:
        """Attribute token."""
        return int(self._check().attribute)

    @property
    def ordinal(self) -> int:
        """Informational: the newest sealed change ordinal among the group's rows (not the
        snapshot a read selects)."""
        return int(self._check().ordinal)

    @property
    def is_delete(self) -> bool:
        """Tombstone group (no tensors)."""
        return bool(self._check().is_delete)

    @property
    def is_array(self) -> bool:
        """Ragged (one tensor per row) vs fixed."""
        return bool(self._check().is_array)

    @property
    def semantic(self) -> AttributeSemantic | int:
        """The column's :class:`AttributeSemantic` (a value this package does not know, from a
        newer library, comes back as the raw ``int``)."""
        value = int(self._check().semantic)
        if value in AttributeSemantic._value2member_map_:
            return AttributeSemantic(value)
        return value

    def array(self, i: int = 0) -> np.ndarray:
        """Read-only zero-copy numpy view of tensor ``i`` in its typed shape (e.g. ``(N, 3)``,
        ``(N, 4, 4)``; ``view.reshape(-1)`` for flat indexing); a bfloat16 tensor comes back
        as its raw ``uint16`` bits (numpy has no bfloat16).

        CPU tensors only: a tensor of a GPU column raises ``NotImplementedError`` (use
        ``dlpack(i)`` with ``torch.from_dlpack`` / ``cupy.from_dlpack``).
        """
        self._require_host(i)
        return self.dlpack(i, readonly=True).numpy()

    def __repr__(self) -> str:
        if self._released:
            return "ReadGroup(released)"
        return (
            f"ReadGroup(id={self.id}, attribute={self.attribute}, ordinal={self.ordinal}, "
            f"prims={self.prim_count}, tensors={self.tensor_count})"
        )


class MapGroup(_GroupBase):
    """A writable group of a map session: fill ``array(i)`` (or ``dlpack(i)``), then commit
    with ``Map.unmap_group`` or ``Map.unmap``. Buffers start with the current values."""

    _readonly_default = False

    def __init__(self, raw: MapGroupRaw, mapping: Map | None = None) -> None:
        """A view of ``raw`` belonging to the session ``mapping`` (None: a detached view).
        Its accessors raise ``INVALID_HANDLE`` once it was committed or the session ended."""
        self.raw = raw
        self._stage: Stage | None = None if mapping is None else mapping._stage
        self._released = False
        self._id = 0
        # The session this group came from: a group keeps its session alive, so the Map's
        # finalizer cannot unmap it while the group is still being filled.
        self._session = mapping

    @classmethod
    def _from_native(
        cls, addr: int, group_id: int, stage: Stage, mapping: Map | None = None
    ) -> MapGroup:
        """The group whose ``ovstage_map_group_t`` the engine laid out at ``addr``."""
        group = cls(MapGroupRaw.from_address(addr), mapping)
        group._stage, group._id = stage, group_id
        return group

    def _check(self) -> ReadGroupRaw | MapGroupRaw:
        if self._session is not None and self._session._released:
            raise OvstageError(
                ErrorCode.INVALID_HANDLE, "MapGroup accessor called after its map session ended"
            )
        return super()._check()

    def _group_id(self) -> int:
        self._check()
        return self._id

    def __repr__(self) -> str:
        if self._released:
            return "MapGroup(committed)"
        return f"MapGroup(prims={self.prim_count}, tensors={self.tensor_count})"
