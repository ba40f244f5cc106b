"""One machine-readable line per benchmark figure, for ``run_all.py``'s table.

A bench script calls :func:`figure` for each figure it measures; the line starts with
``FIGURE`` and holds tab-separated fields: name, value, unit, limit (the target or what the
value is compared with, "" when none) and verdict ("met", "missed" or "").
"""

from __future__ import annotations

PREFIX = "FIGURE\t"


def figure(
    name: str, value: float | str, unit: str = "", limit: str = "", ok: bool | None = None
) -> None:
    text = f"{value:.3g}" if isinstance(value, float) else str(value)
    verdict = "" if ok is None else ("met" if ok else "missed")
    print(f"{PREFIX}{name}\t{text}\t{unit}\t{limit}\t{verdict}", flush=True)


def parse(line: str) -> tuple[str, str, str, str, str] | None:
    """The fields of a FIGURE line (None for any other line)."""
    if not line.startswith(PREFIX):
        return None
    fields = (line.rstrip("\n").split("\t") + [""] * 6)[1:6]
    return fields[0], fields[1], fields[2], fields[3], fields[4]
