package replication

import (
	"fmt"
)

// names are the JetStream names of one replicated stage (docs/replication.md, "Names"): the
// stream OVSTAGE_<name> holds the subjects ovstage.<name>.data (column changes) and
// ovstage.<name>.floor (advances); the stream OVSTAGE-OWNER_<name> holds
// ovstage.<name>.owner (the publisher's claim, apart so that the data stream's limits never
// drop it); the object store OVSTAGE-SNAP_<name> the newest snapshot. No stage name makes
// one stage's names another's: '_' follows the prefixes.
type names struct {
	stage, stream, ownerStream, snapshots, data, floor, owner string
}

// maxNameLen keeps the stream name well inside JetStream's limits.
const maxNameLen = 200

func namesOf(stage string) (names, error) {
	if stage == "" {
		return names{}, fmt.Errorf("stage name is empty: a replicated stage needs a name (letters, digits, '_' or '-')")
	}
	if len(stage) > maxNameLen {
		return names{}, fmt.Errorf("stage name %q is %d bytes long: at most %d can name a stream", stage, len(stage), maxNameLen)
	}
	for _, r := range stage {
		ok := r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return names{}, fmt.Errorf("stage name %q cannot name a NATS stream: %q is not a letter, digit, '_' or '-'", stage, r)
		}
	}
	base := "ovstage." + stage + "."
	return names{stage: stage, stream: "OVSTAGE_" + stage, ownerStream: "OVSTAGE-OWNER_" + stage,
		snapshots: "OVSTAGE-SNAP_" + stage, data: base + "data", floor: base + "floor", owner: base + "owner"}, nil
}
