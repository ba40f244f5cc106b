"""Attribute aliases: the engine's table of public names and the storage names behind them.

The stage keeps the transform columns under storage names (``omni:fabric:localMatrix``,
``omni:fabric:resetXformStack``) and resolves the public names (``omni:xform``,
``omni:resetXformStack``) to them; attribute discovery reports the storage names
(docs/architecture.md, "Attribute aliases"). The table is read from the engine once
(``AttributeAliases``), so Python holds no copy of its own.
"""

from __future__ import annotations

from ._lib import call, native

__all__ = ["PUBLIC_NAME", "STORAGE_NAME", "public_name"]


def _read_table() -> dict[str, str]:
    text: str = call(native.AttributeAliases)
    pairs = (line.split(" ") for line in text.splitlines() if line)
    return {public: storage for public, storage in pairs}


#: Public name -> storage name.
STORAGE_NAME: dict[str, str] = _read_table()
#: Storage name -> public name.
PUBLIC_NAME: dict[str, str] = {storage: public for public, storage in STORAGE_NAME.items()}


def public_name(name: str) -> str:
    """The public name of the column ``name`` addresses (``name`` itself if no alias has it
    as its storage name)."""
    return PUBLIC_NAME.get(name, name)
