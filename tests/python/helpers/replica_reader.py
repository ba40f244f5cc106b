"""Child process of test_replication: follows a published stage and prints what it reads.

argv: url, stage name, ordinal, JSON list of prim paths, JSON list of attributes. Once the
replica has applied that ordinal it prints one JSON object: the replica's status and
:func:`snapshot` of its stage.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import ovstage
import ovstage.replication

sys.path.insert(0, __file__.rsplit("/helpers/", 1)[0])
from readback import latest, read_groups


def snapshot(
    stage: ovstage.Stage, paths: list[str], attributes: list[str], last: int
) -> dict[str, Any]:
    """``latest(last)`` values per attribute, and the groups of a ``between(1, last)`` range
    read (attribute, group ordinal, tombstone flag, prims, values)."""
    out: dict[str, Any] = {}
    d = ovstage.PathDictionary(stage)
    with d.create_path_list_from_strings(paths) as lst, stage.query_from_path_list(lst) as q:
        for a in attributes:
            vals = latest(stage, q, a, last)
            out[a] = {p: np.atleast_1d(np.asarray(v)).tolist() for p, v in vals.items()}
        changes = []
        for g in read_groups(stage, q, attributes, ovstage.OrdinalRange.between(1, last)):
            values = {p: np.atleast_1d(np.asarray(v)).tolist() for p, v in g.values.items()}
            changes.append([g.attribute, g.ordinal, g.is_delete, sorted(g.prims), values])
        out["changes"] = sorted(changes, key=json.dumps)
    return out


def main() -> None:
    url, name, ordinal = sys.argv[1], sys.argv[2], int(sys.argv[3])
    paths, attributes = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    with ovstage.replication.Replica(url, name) as replica:
        st = replica.wait_ordinal(ordinal, timeout=30)
        out = snapshot(replica.stage, paths, attributes, ordinal)
        out["status"] = {"ordinal": st.ordinal, "lag": st.lag_ordinals}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
