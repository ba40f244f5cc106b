package column

import (
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
)

// Placer opens the storage of a placement and moves buffers between placements. A column keeps
// one current copy, where its latest placed change put it: a change placed elsewhere moves the
// column there when it seals (an ordinary update, never an error), and readers on another
// device get a copy of their own (core/placement.go).
type Placer interface {
	Open(p Placement) (Storage, error)
	// Move returns a buffer of placement to with b's bytes, taking over b's reference (b
	// itself when it is already there). On error b is still the caller's.
	Move(b buffer.Buffer, to Placement) (buffer.Buffer, error)
}

// PlacementOf is where b's bytes live.
func PlacementOf(b buffer.Buffer) Placement {
	if b.OnHost() {
		return Host
	}
	return Placement{DeviceType: b.DeviceType(), DeviceID: b.DeviceID()}
}

// hostPlacer is the placer of columns made without one: host storage only.
type hostPlacer struct{}

func (hostPlacer) Open(p Placement) (Storage, error) {
	if !p.IsHost() {
		return nil, status.Errorf(status.Internal, "a column without a device placer cannot move to %s", p)
	}
	return HostStorage(), nil
}

func (hostPlacer) Move(b buffer.Buffer, to Placement) (buffer.Buffer, error) {
	if from := PlacementOf(b); from != to {
		return b, status.Errorf(status.Internal, "a buffer on %s cannot move to %s without a device placer", from, to)
	}
	return b, nil
}

// hostCopy returns a host buffer with b's bytes (a new reference; b itself when on the host).
func hostCopy(p Placer, b buffer.Buffer) (buffer.Buffer, error) {
	out, err := p.Move(b.Retain(), Host)
	if err != nil {
		b.Release()
	}
	return out, err
}

// placedRun returns how many leading deltas of fold seal in one placement, and that placement:
// deltas without a placement of their own (map commits, clones, tombstones) go wherever the
// column is; the first placed delta elsewhere starts a run of its own.
func (c *Column) placedRun(fold []*Delta) (int, Placement) {
	target := c.store.Placement()
	for i, d := range fold {
		if d.Place == (Placement{}) || d.Place == target {
			continue
		}
		if i > 0 {
			return i, target
		}
		target = d.Place
	}
	return len(fold), target
}

// moveToLocked moves the column's sealed state to placement to and switches its storage
// there, taking its versions along (moveVersionsLocked). On failure the column is unchanged.
func (c *Column) moveToLocked(to Placement) error {
	store, err := c.placer.Open(to)
	if err != nil {
		return err
	}
	m := newMover(c.placer, to)
	defer m.done()
	if c.Schema.IsArray {
		// Rows share their payload's buffer, which moves once (images share it too).
		err = m.moveAll(c.arrays.forEachRef)
	} else {
		var nb buffer.Buffer
		if nb, err = c.placer.Move(c.sealed.Retain(), to); err == nil {
			c.sealed.Release()
			c.sealed = nb
		} else {
			c.sealed.Release()
		}
	}
	if err != nil {
		store.Close()
		return err
	}
	c.store.Close()
	c.store = store
	c.moveVersionsLocked(m)
	return nil
}

// mover moves buffers to one placement, each distinct buffer once however many references
// name it, keeping a reference to what it moved until done.
type mover struct {
	placer Placer
	to     Placement
	moved  map[any]buffer.Buffer
}

func newMover(p Placer, to Placement) *mover {
	return &mover{placer: p, to: to, moved: map[any]buffer.Buffer{}}
}

// moveAll moves every buffer walk names, then switches each reference to its moved buffer;
// when a move fails, it switches none and returns the error.
func (m *mover) moveAll(walk func(fn func(b *buffer.Buffer))) error {
	var err error
	walk(func(b *buffer.Buffer) {
		if _, ok := m.moved[b.Raw()]; ok || err != nil || !b.Valid() {
			return
		}
		nb, moveErr := m.placer.Move(b.Retain(), m.to)
		if moveErr != nil {
			b.Release()
			err = moveErr
			return
		}
		m.moved[b.Raw()] = nb
	})
	if err != nil {
		return err
	}
	walk(func(b *buffer.Buffer) {
		if b.Valid() {
			old := *b
			*b = m.moved[old.Raw()].Retain()
			old.Release()
		}
	})
	return nil
}

// done releases the mover's references.
func (m *mover) done() {
	for _, b := range m.moved {
		b.Release()
	}
}
