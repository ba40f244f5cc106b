"""Whether OpenUSD (the ``pxr`` modules of usd-core) can be imported.

USD is optional: the package imports without it and population calls raise NOT_SUPPORTED
naming the extra to install. Every module of this package that needs ``pxr`` imports it from
here, after checking :data:`AVAILABLE`.
"""

from __future__ import annotations

from typing import Any

#: pip extra that brings usd-core.
INSTALL_HINT = "install it with: pip install 'ovstage-go[usd]' (brings usd-core from PyPI)"

Usd: Any = None
Sdf: Any = None
Tf: Any = None
Vt: Any = None
Gf: Any = None
UsdGeom: Any = None

try:
    from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt  # type: ignore[no-redef]  # noqa: F401

    AVAILABLE = True
    REASON = ""
except ImportError as exc:  # usd-core not installed, or a broken install
    AVAILABLE = False
    REASON = f"USD population needs OpenUSD, which cannot be imported ({exc}); {INSTALL_HINT}"
