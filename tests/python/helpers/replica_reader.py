"""Child process of test_replication: follows a published stage and prints what it reads.

argv: url, stage name, ordinal, JSON list of prim paths, JSON list of attributes, and
optionally "after-snapshot". Once the replica has applied that ordinal it prints one JSON
object: the replica's status and :func:`snapshot` of its stage (with "after-snapshot": of the
ordinals after the snapshot it started from, and the latest values at each of them).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import ovstage
import ovstage.replication

sys.path.insert(0, __file__.rsplit("/helpers/", 1)[0])
from readback import latest, prim_paths_held, read_groups


def snapshot(
    stage: ovstage.Stage, paths: list[str], attributes: list[str], last: int, first: int = 1
) -> dict[str, Any]:
    """``latest(last)`` values per attribute, the prims held ("held"), and the groups of a
    ``between(first, last)`` range read (attribute, group ordinal, tombstone flag, prims,
    values); with ``first > 1`` also ``latest(o)`` for every ordinal o in first..last
    ("at")."""
    out: dict[str, Any] = {}
    d = ovstage.PathDictionary(stage)
    with d.create_path_list_from_strings(paths) as lst, stage.query_from_path_list(lst) as q:

        def latest_values(a: str, o: int) -> dict[str, Any]:
            vals = latest(stage, q, a, o)
            return {p: np.atleast_1d(np.asarray(v)).tolist() for p, v in vals.items()}

        for a in attributes:
            out[a] = latest_values(a, last)
        out["held"] = prim_paths_held(stage, q, last)
        if first > 1:
            out["at"] = {
                str(o): {a: latest_values(a, o) for a in attributes} for o in range(first, last + 1)
            }
        changes = []
        for g in read_groups(stage, q, attributes, ovstage.OrdinalRange.between(first, last)):
            values = {p: np.atleast_1d(np.asarray(v)).tolist() for p, v in g.values.items()}
            changes.append([g.attribute, g.ordinal, g.is_delete, sorted(g.prims), values])
        out["changes"] = sorted(changes, key=json.dumps)
    return out


def main() -> None:
    url, name, ordinal = sys.argv[1], sys.argv[2], int(sys.argv[3])
    paths, attributes = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    with ovstage.replication.Replica(url, name) as replica:
        st = replica.wait_ordinal(ordinal, timeout=30)
        first = st.snapshot_ordinal + 1 if sys.argv[6:] == ["after-snapshot"] else 1
        out = snapshot(replica.stage, paths, attributes, ordinal, first)
        out["status"] = {
            "ordinal": st.ordinal,
            "lag": st.lag_ordinals,
            "snapshot_ordinal": st.snapshot_ordinal,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
