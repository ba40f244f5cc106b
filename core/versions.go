package core

import "github.com/ovstage-go/ovstage/core/column"

// History is how many versions a stage keeps so that a consumer lagging behind the producer
// is served the snapshot it asks for (README "Where we differ"): a snapshot read at an ordinal
// up to Ordinals behind its attribute's floor returns the state at that ordinal, within a
// memory budget of Bytes over every column (the oldest versions go first). Ordinals 0 keeps
// none and answers as the reference (a later change refuses the read with OUT_OF_RANGE).
type History struct {
	Ordinals uint64
	Bytes    uint64 // 0: DefaultHistoryBytes
}

// Defaults: lagging consumers work with no configuration.
const (
	DefaultHistoryOrdinals = 16
	DefaultHistoryBytes    = 256 << 20
)

// DefaultHistory is the window of a stage whose Config names none.
var DefaultHistory = History{Ordinals: DefaultHistoryOrdinals, Bytes: DefaultHistoryBytes}

// resolved fills in the default budget.
func (h History) resolved() History {
	if h.Bytes == 0 {
		h.Bytes = DefaultHistoryBytes
	}
	return h
}

// readAdmission is how reads of a stage with this window answer a change after their end.
func (h History) readAdmission() column.Admission {
	if h.Ordinals == 0 {
		return column.ReferenceParity
	}
	return column.ServeSealed
}

// newColumnVersionsLocked gives a new column the stage's window.
func (s *Stage) newColumnVersionsLocked(c *column.Column) {
	c.SetVersionWindow(s.historyWindow.Ordinals)
}

// trimVersions keeps the stage's retained versions within its memory budget: first the
// materialised states of lagging reads go (they can be rebuilt), then the oldest ordinals'
// images (which raises the oldest preserved ordinal).
func (s *Stage) trimVersions() {
	if s.historyWindow.Ordinals == 0 {
		return
	}
	cols := s.allColumns()
	total := int64(0)
	for _, c := range cols {
		total += c.VersionBytes()
	}
	if total <= int64(s.historyWindow.Bytes) {
		return
	}
	for _, c := range cols {
		c.DropVersionStates()
	}
	for {
		total := int64(0)
		oldest, col := ^uint64(0), (*column.Column)(nil)
		for _, c := range cols {
			total += c.VersionBytes()
			if o, ok := c.OldestVersion(); ok && o < oldest {
				oldest, col = o, c
			}
		}
		if total <= int64(s.historyWindow.Bytes) || col == nil {
			return
		}
		col.DropOldestVersions(oldest)
	}
}

// allColumns lists every column of the stage.
func (s *Stage) allColumns() []*column.Column {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*column.Column
	for _, cols := range s.columns {
		out = append(out, cols...)
	}
	return out
}
