"""The USD export example (examples/python/usd-export), run as a script with this interpreter.

It needs usd-core and prints a deterministic report, asserted line by line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pxr", reason="usd-core is not installed (pip install 'ovstage-go[usd]')")

IDENTITY = "( (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1) )"
FELL_TO_6 = "( (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 6, 1) )"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "usd-export" / "main.py"


def test_usd_export_example_output() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=EXAMPLE.parent,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "ordinal 1: full export, 3 attributes",
        "ordinal 2: changed since 1: 1 attribute, 1 transform",
        "ordinal 3: changed since 2: 1 attribute, 1 transform",
        "ordinal 4: changed since 3: 1 attribute, 1 transform",
        "--- the written layer ---",
        "#usda 1.0",
        "",
        'over "World"',
        "{",
        f"    matrix4d xformOp:transform = {IDENTITY}",
        '    uniform token[] xformOpOrder = ["xformOp:transform"]',
        "",
        '    over "Ball"',
        "    {",
        "        custom float sim:charge = None",
        "        custom float sim:temperature = 310",
        f"        matrix4d xformOp:transform = {FELL_TO_6}",
        '        uniform token[] xformOpOrder = ["xformOp:transform"]',
        "    }",
        "",
        '    over "Floor"',
        "    {",
        "        custom float sim:temperature = 280",
        f"        matrix4d xformOp:transform = {IDENTITY}",
        '        uniform token[] xformOpOrder = ["xformOp:transform"]',
        "    }",
        "}",
        "--- composed over the scene ---",
        "Ball at (0.0, 0.0, 6.0), 310.0 K",
        "Ball sim:charge: None (deleted at ordinal 3)",
        "Floor 280.0 K",
    ]
