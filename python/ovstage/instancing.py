"""``ovstage.instancing``: scene-graph instancing queries.

Instancing data comes from USD population, which needs an OpenUSD runtime; this build has
none. The module has the reference's functions so code using them imports unchanged;
``available()`` is False and every query raises ``OvstageError(NOT_SUPPORTED)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from ._errors import ErrorCode, OvstageError

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = [
    "available",
    "get_instance_roots",
    "get_prototype_root",
    "get_prototype_roots",
]

#: Why every function of this module raises.
UNAVAILABLE_MESSAGE = (
    "USD instancing is not in this build: ovstage-go has no OpenUSD runtime, so no "
    "instanced USD content is ever populated"
)


def _unsupported(what: str) -> NoReturn:
    raise OvstageError(ErrorCode.NOT_SUPPORTED, f"instancing.{what}: {UNAVAILABLE_MESSAGE}")


def available() -> bool:
    """Whether the instancing extension is available (never, in this build)."""
    return False


def get_prototype_roots(stage: Stage) -> list[str]:
    """All prototype roots (reference: ``/__Prototype_<id>`` paths). Raises NOT_SUPPORTED."""
    _unsupported("get_prototype_roots")


def get_prototype_root(stage: Stage, instance_root: str) -> str:
    """The prototype root an instance root references. Raises NOT_SUPPORTED."""
    _unsupported("get_prototype_root")


def get_instance_roots(stage: Stage, prototype_root: str) -> list[str]:
    """The instance roots referencing a prototype root. Raises NOT_SUPPORTED."""
    _unsupported("get_instance_roots")
