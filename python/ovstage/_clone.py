"""Clone results: ``CloneResult`` (a finished clone's completion report) and
``CloneOperation`` (the ``Operation`` of ``Stage.clone_async``, which keeps that report)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import TIMEOUT_INFINITE, OvstageError
from ._ops import Operation

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["CloneOperation", "CloneResult"]


@dataclass(frozen=True)
class CloneResult:
    """What a finished clone did (fields in the reference's Python order, not the C order).

    ``prims_cloned`` sums, over the targets, the prims of each target's hierarchy subtree
    once the clone is done (created, merged-into and already present prims alike);
    ``target_count`` is the number of targets passed; ``source_prim_count`` the prims of the
    source subtree, its root included; ``ordinal`` the ordinal the clone was recorded at.
    """

    prims_cloned: int
    target_count: int
    source_prim_count: int
    ordinal: int


class CloneOperation(Operation):
    """The op of a clone. ``wait()`` returns self; on success it keeps the report (fetched
    while the op is still tracked, then the op is released), on failure the clone's own error
    (``NOT_FOUND``, ``PRIM_NOT_FOUND``, ``WRITE_FLOOR_VIOLATION``, ``OP_FAILED`` ...).
    ``result()`` returns the report, re-raises that error, or waits first."""

    __slots__ = ("_failure", "_report")

    def __init__(
        self,
        stage: Stage,
        status: int,
        op_id: int,
        keepalive: Any = None,
        message: str = "",
    ) -> None:
        super().__init__(stage, status, op_id, keepalive, message)
        self._report: CloneResult | None = None
        self._failure: OvstageError | None = None

    @classmethod
    def _accepted(cls, stage: Stage, op_id: int) -> CloneOperation:
        self = super()._accepted(stage, op_id)
        assert isinstance(self, CloneOperation)
        self._report = None
        self._failure = None
        return self

    def _completed(self, failed: bool) -> None:
        try:
            self._report = self._stage.fetch_clone_result(self._op_id, 0)
        except OvstageError as exc:
            self._failure = exc  # the clone's own code, with its message

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> CloneOperation:
        """Wait like :meth:`Operation.wait` (raises when rejected, failed or timed out) and
        return self."""
        super().wait(timeout)
        return self

    def result(self, timeout: int = TIMEOUT_INFINITE) -> CloneResult:
        """The clone's report; raises its failure (the specific code) or a rejection, and
        waits first (up to ``timeout`` ns) while it is not finished."""
        if self._report is None and self._failure is None:
            self.wait(timeout)
        if self._failure is not None:
            raise self._failure
        assert self._report is not None
        return self._report
