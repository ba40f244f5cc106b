"""The examples that read USD scenes (examples/python), run as scripts with this interpreter.

They need usd-core; each one prints a deterministic report that is asserted line by line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python"


def run_example(script: Path) -> subprocess.CompletedProcess[str]:
    """One run of an example, leaked handles escalated to errors."""
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )


def output_of(script: Path) -> list[str]:
    result = run_example(script)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_usd_to_ovstage_example_output() -> None:
    assert output_of(EXAMPLES / "usd-to-ovstage" / "main.py") == [
        "wrote 5 prims: /World /World/Table /World/Table/Box /World/Table/Tet /World/Lamp",
        "usd-prim-type IN [Mesh]: /World/Table/Box /World/Table/Tet",
        "usd-schemas CONTAINS [PhysicsRigidBodyAPI]: /World/Table/Box /World/Table/Tet",
        "usd-parent IN [/World/Table]: /World/Table/Box /World/Table/Tet",
        # Ragged points and colors keep their 3 components per element.
        "/World/Table/Box: 8 points x 3, 1 colors, extent [0.0, 0.0, 0.0]..[1.0, 1.0, 1.0], "
        "sim:temperature 300.0",
        "/World/Table/Tet: 4 points x 3, 2 colors, extent [0.0, 0.0, 0.0]..[1.0, 1.0, 1.0], "
        "sim:temperature 310.5",
        # compute_hierarchy composes the written local transforms as pxr does.
        "/World/Lamp world origin [0.0, 0.0, 3.0] (as pxr computes it: True)",
        "/World/Table world origin [1.0, 2.0, 0.0] (as pxr computes it: True)",
        "/World/Table/Box world origin [1.0, 2.0, 1.0] (as pxr computes it: True)",
        "/World/Table/Tet world origin [1.5, 1.5, 1.0] (as pxr computes it: True)",
    ]
