package replication

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// connectTimeout bounds the first connection; later outages reconnect in the background.
const connectTimeout = 3 * time.Second

// redact is the URL with any password or token replaced, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User("***")
	return u.String()
}

// checkURL refuses what cannot be a NATS server URL before any connection is tried.
func checkURL(raw string) error {
	for _, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			return fmt.Errorf("url %q is not a URL: %w", redact(one), err)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("url %q: the scheme must be nats://, tls://, ws:// or wss://", redact(one))
		}
		if u.Host == "" {
			return fmt.Errorf("url %q names no host", redact(one))
		}
	}
	return nil
}

// connect dials url (credentials and TLS settings in it pass through to the client) and keeps
// reconnecting after an outage.
func connect(raw string) (*nats.Conn, error) {
	if err := checkURL(raw); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(raw, nats.Name("ovstage"), nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("cannot reach a NATS server at %s: %w", redact(raw), err)
	}
	return nc, nil
}
