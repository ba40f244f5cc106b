package replication

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embeddedMaxPayload is the largest message the embedded server accepts; data messages are
// split to fit the server's limit (docs/replication.md, "Messages").
const embeddedMaxPayload = 8 << 20

// Embedded is an in-process NATS server with JetStream, listening on loopback only.
type Embedded struct {
	srv     *server.Server
	dir     string
	tempDir bool
}

// StartEmbedded starts a server on 127.0.0.1 at a random port, storing JetStream files in dir
// (a new temporary directory, removed at Shutdown, when dir is empty).
func StartEmbedded(dir string) (*Embedded, error) {
	return startEmbedded(dir, server.RANDOM_PORT)
}

// startEmbedded is StartEmbedded at a given port (tests restart a server where its clients
// reconnect).
func startEmbedded(dir string, port int) (*Embedded, error) {
	e := &Embedded{dir: dir}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ovstage-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server: temporary storage directory: %w", err)
		}
		e.dir, e.tempDir = tmp, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded NATS server: storage directory %q: %w", dir, err)
	}
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   e.dir,
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: embeddedMaxPayload,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS server (storage %q) was not ready within 10s", e.dir)
	}
	e.srv = srv
	return e, nil
}

// URL is the client URL (nats://127.0.0.1:<port>).
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Dir is the JetStream storage directory.
func (e *Embedded) Dir() string { return e.dir }

// Shutdown stops the server and waits for it; a temporary storage directory is removed.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.removeTemp()
}

func (e *Embedded) removeTemp() {
	if e.tempDir {
		_ = os.RemoveAll(e.dir)
	}
}
