package column

// rowSet is a set of a column's rows, one bit per row.
type rowSet []uint64

func newRowSet(rows int) rowSet { return make(rowSet, (rows+63)/64) }

// add inserts r and reports whether it was new.
func (s rowSet) add(r int32) bool {
	w, bit := int(r)>>6, uint64(1)<<(uint(r)&63)
	if s[w]&bit != 0 {
		return false
	}
	s[w] |= bit
	return true
}

func (s rowSet) has(r int32) bool {
	w := int(r) >> 6
	return w < len(s) && s[w]&(1<<(uint(r)&63)) != 0
}

// first returns the first of rows in the set.
func (s rowSet) first(rows []int32) (int32, bool) {
	for _, r := range rows {
		if s.has(r) {
			return r, true
		}
	}
	return 0, false
}

// keySet is the set of rows a read selects: every row (all), or the rows of a rowSet.
type keySet struct {
	all  bool
	rows rowSet
}

// first returns the first of rows that the set holds.
func (k keySet) first(rows []int32) (int32, bool) {
	if k.all {
		if len(rows) == 0 {
			return 0, false
		}
		return rows[0], true
	}
	return k.rows.first(rows)
}

// has reports whether the set holds row r.
func (k keySet) has(r int32) bool { return k.all || k.rows.has(r) }

// isIdentity reports whether rows is 0, 1, ..., len(rows)-1.
func isIdentity(rows []int32) bool {
	if len(rows) == 0 {
		return true
	}
	if &rows[0] == &identityRows(1)[0] {
		return true // the current shared identity sequence
	}
	for i, r := range rows {
		if int(r) != i {
			return false
		}
	}
	return true
}
