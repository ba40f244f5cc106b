"""The filter-query example (examples/python/queries), run as a script with this interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QUERIES = REPO / "examples" / "python" / "queries" / "main.py"


@pytest.fixture(scope="module")
def queries_run() -> subprocess.CompletedProcess[str]:
    """One run of the queries example, leaked handles escalated to errors."""
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(QUERIES)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_queries_example_exits_cleanly(queries_run) -> None:
    assert queries_run.returncode == 0, queries_run.stderr
    assert queries_run.stderr == ""


def test_queries_example_output(queries_run) -> None:
    assert queries_run.stdout.splitlines() == [
        # Committed (not yet sealed) writes are visible to queries.
        "before sealing: 4 Mesh prims",
        # Discovery lists client-written columns, never the derived built-ins.
        "8 prims carry mass, usd-prim-type, usd-schemas",
        "/World/Table carries usd-prim-type, usd-schemas",
        "discovery scoped to [mass]: mass",
        "usd-prim-type IN [Mesh]: "
        "/World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base /World/Table",
        # Byte prefix: /Worldwide matches "/World".
        "usd-path PREFIX [/World]: /World /World/Light /World/Robot /World/Robot/Arm "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table /Worldwide",
        "usd-path PREFIX [/World/]: /World/Light /World/Robot /World/Robot/Arm "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table",
        "usd-parent IN [/World/Robot]: /World/Robot/Arm /World/Robot/Base",
        "usd-children CONTAINS [/World/Robot/Arm/Gripper]: /World/Robot/Arm",
        "usd-schemas CONTAINS [PhysicsRigidBodyAPI]: "
        "/World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base",
        "mass HAS: /World/Robot/Arm /World/Robot/Arm/Gripper /World/Robot/Base",
        "usd-prim-type IN [Mesh] AND usd-schemas CONTAINS [PhysicsCollisionAPI]: "
        "/World/Robot/Arm/Gripper /World/Robot/Base /World/Table",
        "usd-prim-type IN [SphereLight, Xform]: /World /World/Light /World/Robot /Worldwide",
        "mass GT [1]: /World/Robot/Arm=3.0 /World/Robot/Base=12.5",
        "usd-active: NOT_SUPPORTED",
    ]
