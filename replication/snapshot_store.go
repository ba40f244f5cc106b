package replication

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ovstage-go/ovstage/core"
)

// snapshotTimeout bounds storing one snapshot.
const snapshotTimeout = 30 * time.Second

// snapshotJob is a snapshot to encode and store: the advance it follows, its state, and the
// path memo after that advance (a copy: the publishing goroutine keeps changing its own).
type snapshotJob struct {
	header snapshotHeader
	state  *core.SealedState
}

// queueSnapshot hands the snapshot carried by q to the storing goroutine, replacing one that
// waits (the newer covers more). Called by the publishing goroutine, the only sender.
func (p *Publisher) queueSnapshot(q queued) {
	job := snapshotJob{state: q.adv.State, header: snapshotHeader{Epoch: p.epoch, Seq: q.seq, Ordinal: q.adv.Ordinal,
		Nanos: q.nanos, GlobalFloor: q.adv.State.GlobalFloor, Floors: q.adv.State.Floors, Memo: maps.Clone(p.memo)}}
	select {
	case p.pendingSnap <- job:
	default:
		select {
		case <-p.pendingSnap:
		default:
		}
		p.pendingSnap <- job
	}
}

// storeSnapshots encodes and stores queued snapshots, one at a time, until Close (which
// stores the one waiting within its bound).
func (p *Publisher) storeSnapshots() {
	defer close(p.snapDone)
	defer func() {
		if r := recover(); r != nil {
			p.setError(fmt.Sprintf("snapshots stopped: internal panic: %v", r))
		}
	}()
	for {
		select {
		case job := <-p.pendingSnap:
			p.storeSnapshot(job)
		case <-p.done: // the publishing goroutine stopped: nothing more is queued
			select {
			case job := <-p.pendingSnap:
				p.storeSnapshot(job)
			default:
			}
			return
		}
	}
}

// storeSnapshot stores one snapshot as the object snapshotObject (replacing the previous).
func (p *Publisher) storeSnapshot(job snapshotJob) {
	data, err := encodeSnapshot(job.header, job.state, p.limit)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
		go func() { // Close's bound holds while the server is away
			select {
			case <-p.abort:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err = p.snaps.PutBytes(ctx, snapshotObject, data)
		cancel()
	}
	if err != nil {
		p.setError(fmt.Sprintf("snapshot of advance %d (floor %d) not stored: %v", job.header.Seq, job.header.Ordinal, err))
		return
	}
	p.mu.Lock()
	p.st.Snapshots++
	p.st.SnapshotOrdinal = job.header.Ordinal
	p.snapSeq = job.header.Seq
	p.mu.Unlock()
}

// Snapshot publishes a snapshot of the stage's sealed state now: it requests the state, seals
// it with an advance that raises no floor, and waits (at most timeout) until it is stored.
func (p *Publisher) Snapshot(timeout time.Duration) error {
	p.mu.Lock()
	before := p.seq // the advance that carries the state comes after this one
	p.mu.Unlock()
	if err := p.stage.RequestSealedState(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	op, err := p.stage.AdvanceWriteFloor(p.stage.GlobalFloor(), core.ScopeInclude, nil)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	res, err := p.stage.WaitOp(op, uint64(timeout.Nanoseconds()))
	_ = p.stage.ReleaseOp(op)
	if err == nil && len(res.ErrorOpIDs) > 0 {
		err = errors.New(res.Message)
	}
	if err != nil {
		return fmt.Errorf("snapshot: the advance that takes it: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		got, msg := p.snapSeq, p.st.LastError
		p.mu.Unlock()
		if got > before {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("snapshot after advance %d not stored within %s (last error: %q)", before, timeout, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
