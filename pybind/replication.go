package pybind

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/replication"
)

// Publishers and replicas by id (docs/replication.md). Their start errors are
// InvalidArgument statuses: the Python package raises them as ReplicationError.
var (
	replNext   atomic.Uint64
	publishers = &table[*replication.Publisher]{what: "publisher"}
	replicas   = &table[*replication.Replica]{what: "replica"}
)

// table holds the live publishers or replicas.
type table[T interface{ Close() }] struct {
	mu   sync.Mutex
	what string
	m    map[uint64]T
}

func (t *table[T]) add(v T) uint64 {
	id := replNext.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]T{}
	}
	t.m[id] = v
	return id
}

// get is the live id's value.
func (t *table[T]) get(id uint64) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[id]
	if !ok {
		return v, errClosed(t.what, id)
	}
	return v, nil
}

// statusJSON is the JSON of status(v) for a live id.
func statusJSON[T interface{ Close() }, S any](t *table[T], id uint64, status func(T) S) (string, error) {
	return call(func() (string, error) {
		v, err := t.get(id)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(status(v))
		if err != nil {
			return "", fmt.Errorf("%s status: %w", t.what, err)
		}
		return string(b), nil
	})
}

// close closes and forgets id: 1, or 0 when it was closed already or never existed.
func (t *table[T]) close(id uint64) (int, error) {
	return call(func() (int, error) {
		t.mu.Lock()
		v, ok := t.m[id]
		delete(t.m, id)
		t.mu.Unlock()
		if !ok {
			return 0, nil
		}
		v.Close()
		return 1, nil
	})
}

func errClosed(what string, id uint64) error {
	return status.Errorf(status.InvalidHandle, "%s %d is closed or unknown", what, id)
}

func replErr(err error) error {
	if err == nil {
		return nil
	}
	return status.Errorf(status.InvalidArgument, "%v", err)
}

// StartPublisher publishes the stage's floor advances (replication.Publish); url "" starts
// an embedded server storing in storageDir ("": a temporary directory). maxMsgs, maxBytes
// and maxAgeSeconds limit the stream (0: no limit); snapshotEvery: a snapshot every this
// many advances (0: on request only).
func StartPublisher(stageID uint64, url, storageDir, name string, queue int, takeover bool,
	maxMsgs, maxBytes int64, maxAgeSeconds float64, snapshotEvery int) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		p, err := replication.Publish(s, replication.PublishOptions{URL: url, StorageDir: storageDir,
			Name: name, Queue: queue, Takeover: takeover, MaxMsgs: maxMsgs, MaxBytes: maxBytes,
			MaxAge: time.Duration(maxAgeSeconds * float64(time.Second)), SnapshotEvery: snapshotEvery})
		if err != nil {
			return 0, replErr(err)
		}
		return publishers.add(p), nil
	})
}

// PublisherStatus is the publisher's status as JSON.
func PublisherStatus(id uint64) (string, error) {
	return statusJSON(publishers, id, (*replication.Publisher).Status)
}

// SnapshotPublisher stores a snapshot of the published stage's sealed state now
// (Publisher.Snapshot), waiting at most timeoutSeconds.
func SnapshotPublisher(id uint64, timeoutSeconds float64) (int, error) {
	return call(func() (int, error) {
		p, err := publishers.get(id)
		if err != nil {
			return 0, err
		}
		if err := p.Snapshot(time.Duration(timeoutSeconds * float64(time.Second))); err != nil {
			return 0, status.Errorf(status.Internal, "%v", err)
		}
		return 1, nil
	})
}

// ClosePublisher closes a publisher (a closed or unknown id is a no-op returning 0).
func ClosePublisher(id uint64) (int, error) { return publishers.close(id) }

// StartReplica applies the stream of name on url to the stage (replication.StartReplica).
func StartReplica(stageID uint64, url, name string) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		r, err := replication.StartReplica(s, url, name)
		if err != nil {
			return 0, replErr(err)
		}
		return replicas.add(r), nil
	})
}

// ReplicaStatus is the replica's status as JSON.
func ReplicaStatus(id uint64) (string, error) {
	return statusJSON(replicas, id, (*replication.Replica).Status)
}

// CloseReplica stops a replica (a closed or unknown id is a no-op returning 0).
func CloseReplica(id uint64) (int, error) { return replicas.close(id) }
