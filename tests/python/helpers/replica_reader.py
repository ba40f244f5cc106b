"""Child process of test_replication: follows a published stage and prints its latest values.

argv: url, stage name, ordinal, JSON list of prim paths, JSON list of attributes. Prints one
JSON object {attribute: {path: value list}} of latest(ordinal) reads once the replica has
applied that ordinal.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import ovstage
import ovstage.replication

sys.path.insert(0, __file__.rsplit("/helpers/", 1)[0])
from readback import latest


def main() -> None:
    url, name, ordinal = sys.argv[1], sys.argv[2], int(sys.argv[3])
    paths, attributes = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    with ovstage.replication.Replica(url, name) as replica:
        st = replica.wait_ordinal(ordinal, timeout=30)
        stage = replica.stage
        out: dict[str, Any] = {"status": {"ordinal": st.ordinal, "lag": st.lag_ordinals}}
        lists = ovstage.PathDictionary(stage).create_path_list_from_strings(paths)
        with lists, stage.query_from_path_list(lists) as query:
            for a in attributes:
                vals = latest(stage, query, a, ordinal)
                out[a] = {p: np.atleast_1d(np.asarray(v)).tolist() for p, v in vals.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
