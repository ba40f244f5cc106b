"""A write reads a numpy array's header (dtype, shape, strides, data) while it holds the GIL.

Another thread reassigning ``arr.shape`` during ``write_attribute`` used to make the engine
see shapes the array never had (``[8 4668586643363457004 1]``): the fast path's native side
read the dims after releasing the GIL, while numpy freed and reallocated them. A thread
flipping ``arr.dtype`` (which rescales the last dim) made a dtype read before the flip pair
with a shape read after it, on both paths: a float64 (4, 6) write of a 96-byte buffer (the
fast path read past its end), or a spurious ValueError (general path).

A thread giving a caller's ``DLTensor`` a new shape array (freeing the old one) made the
engine read freed memory (``shape [4 0]``): the descriptor is now copied while the GIL is held.

Each race runs in a fresh interpreter (tests/python/helpers/header_race.py) so that a crash
fails the test instead of the suite, for up to 3 s: a torn read is rare (the shape race hit
about one write in 10,000 to 40,000 before the fix), and the child stops at the first one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HELPER = Path(__file__).resolve().parent / "helpers" / "header_race.py"


@pytest.mark.parametrize("mode", ["shape", "dtype", "dltensor"])
def test_a_write_never_sees_a_header_the_array_did_not_have(mode: str) -> None:
    result = subprocess.run(
        [sys.executable, str(HELPER), mode, "3"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["unexpected"] == [], out
    # The race really ran: every state of the array was seen by some write.
    assert out["accepted"] > 0 and min(out["rejected"]) > 0, out
    assert out["read_back"] == [[float(v) for v in range(24)]]
