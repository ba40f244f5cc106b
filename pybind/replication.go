package pybind

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/replication"
)

// Publishers and replicas by id (docs/replication.md). Their errors are InvalidArgument
// statuses: the Python package raises them as ovstage.replication.ReplicationError.
var (
	replMu     sync.Mutex
	replNext   atomic.Uint64
	publishers = map[uint64]*replication.Publisher{}
	replicas   = map[uint64]*replication.Replica{}
)

func replErr(err error) error {
	if err == nil {
		return nil
	}
	return status.Errorf(status.InvalidArgument, "%v", err)
}

// StartPublisher publishes the stage's floor advances (replication.Publish); url "" starts
// an embedded server storing in storageDir ("" : a temporary directory).
func StartPublisher(stageID uint64, url, storageDir, name string, queue int, takeover bool) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		p, err := replication.Publish(s, replication.PublishOptions{URL: url, StorageDir: storageDir,
			Name: name, Queue: queue, Takeover: takeover})
		if err != nil {
			return 0, replErr(err)
		}
		id := replNext.Add(1)
		replMu.Lock()
		publishers[id] = p
		replMu.Unlock()
		return id, nil
	})
}

// PublisherStatus is the publisher's status as JSON.
func PublisherStatus(id uint64) (string, error) {
	return call(func() (string, error) {
		replMu.Lock()
		p := publishers[id]
		replMu.Unlock()
		if p == nil {
			return "", status.Errorf(status.InvalidHandle, "publisher %d is closed or unknown", id)
		}
		b, err := json.Marshal(p.Status())
		return string(b), err
	})
}

// ClosePublisher closes a publisher (a closed or unknown id is a no-op returning 0).
func ClosePublisher(id uint64) (int, error) {
	return call(func() (int, error) {
		replMu.Lock()
		p := publishers[id]
		delete(publishers, id)
		replMu.Unlock()
		if p == nil {
			return 0, nil
		}
		p.Close()
		return 1, nil
	})
}

// StartReplica applies the stream of name on url to the stage (replication.StartReplica).
func StartReplica(stageID uint64, url, name string) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		r, err := replication.StartReplica(s, url, name)
		if err != nil {
			return 0, replErr(err)
		}
		id := replNext.Add(1)
		replMu.Lock()
		replicas[id] = r
		replMu.Unlock()
		return id, nil
	})
}

// ReplicaStatus is the replica's status as JSON.
func ReplicaStatus(id uint64) (string, error) {
	return call(func() (string, error) {
		replMu.Lock()
		r := replicas[id]
		replMu.Unlock()
		if r == nil {
			return "", status.Errorf(status.InvalidHandle, "replica %d is closed or unknown", id)
		}
		b, err := json.Marshal(r.Status())
		if err != nil {
			return "", fmt.Errorf("replica status: %w", err)
		}
		return string(b), nil
	})
}

// CloseReplica stops a replica (a closed or unknown id is a no-op returning 0).
func CloseReplica(id uint64) (int, error) {
	return call(func() (int, error) {
		replMu.Lock()
		r := replicas[id]
		delete(replicas, id)
		replMu.Unlock()
		if r == nil {
			return 0, nil
		}
		r.Close()
		return 1, nil
	})
}
