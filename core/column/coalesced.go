package column

// coalesced keeps, per row, the ordinal of the row's latest change among the change records
// that retention dropped: below the frontier a key's membership shrinks to this one marker,
// so reads still see that a sealed key changed after an ordinal they ask for. A dropped
// record that covers the first rows in order (a whole-column write) costs no per-row state.
type coalesced struct {
	uniform     uint64 // marker of rows [0, uniformRows)
	uniformRows int
	perRow      []uint64 // nil until a dropped record covers an arbitrary set of rows
}

// get is row r's marker (0: no dropped change).
func (m *coalesced) get(r int32) uint64 {
	v := uint64(0)
	if int(r) < m.uniformRows {
		v = m.uniform
	}
	if int(r) < len(m.perRow) {
		v = max(v, m.perRow[r])
	}
	return v
}

// drop folds a dropped record in. Records are dropped oldest first, so its ordinal is at least
// every marker its rows already have.
func (m *coalesced) drop(rec record, nrows int) {
	if isIdentity(rec.rows) && len(rec.rows) >= m.uniformRows && len(rec.rows) >= len(m.perRow) {
		m.uniform, m.uniformRows, m.perRow = rec.ordinal, len(rec.rows), nil
		return
	}
	if len(m.perRow) < nrows {
		grown := make([]uint64, nrows)
		copy(grown, m.perRow)
		m.perRow = grown
	}
	for _, r := range rec.rows {
		m.perRow[r] = rec.ordinal
	}
}

// any reports whether some row has a marker.
func (m *coalesced) any() bool { return m.uniformRows > 0 || m.perRow != nil }
