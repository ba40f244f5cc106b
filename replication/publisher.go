package replication

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ovstage-go/ovstage/core"
)

// PublishOptions configure Publish.
type PublishOptions struct {
	// URL of the NATS server; empty: start an embedded one (loopback, random port).
	URL string
	// StorageDir is the embedded server's JetStream directory (empty: a temporary one).
	StorageDir string
	// Name is the replicated name (default: the stage's name).
	Name string
	// Queue bounds the advances waiting to be published (default 64); an advance that finds
	// it full is dropped and reported, never waited for.
	Queue int
	// Takeover replaces another publisher's claim on the name (one that crashed).
	Takeover bool
	// Stream limits (0: none): the stream drops its oldest messages beyond this many
	// messages, bytes, or this age. A replica that lacks dropped advances starts from the
	// newest snapshot (docs/replication.md, "Snapshots").
	MaxMsgs  int64
	MaxBytes int64
	MaxAge   time.Duration
	// SnapshotEvery publishes a snapshot of the sealed state every this many advances
	// (0: only when Snapshot is called).
	SnapshotEvery int
}

// PublisherStatus is a snapshot of a publisher's progress.
type PublisherStatus struct {
	URL           string `json:"url"`
	Stream        string `json:"stream"`
	Connected     bool   `json:"connected"`
	Queued        int    `json:"queued"`
	Advances      uint64 `json:"advances"`       // advances published
	Ordinal       uint64 `json:"ordinal"`        // floor of the newest published advance
	SealedOrdinal uint64 `json:"sealed_ordinal"` // floor of the newest advance observed
	Bytes         uint64 `json:"bytes"`          // sealed payload bytes published
	Dropped       uint64 `json:"dropped"`        // advances dropped on a full queue
	// Snapshots stored, and the floor of the newest one's advance.
	Snapshots       uint64 `json:"snapshots"`
	SnapshotOrdinal uint64 `json:"snapshot_ordinal"`
	LastError       string `json:"last_error"`
}

// queued is one observed advance waiting for the publishing goroutine.
type queued struct {
	seq   uint64
	nanos int64
	adv   core.SealedAdvance
}

// Publisher sends what each floor advance of one stage seals to the stream of its name.
type Publisher struct {
	n      names
	stage  *core.Stage
	emb    *Embedded
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	owners jetstream.Stream      // the stream of the name's claim
	snaps  jetstream.ObjectStore // the newest snapshot
	epoch  string
	limit  int
	every  int // SnapshotEvery
	detach func()
	queue  chan queued
	memo   pathMemo // used by the publishing goroutine only
	// startSeq is the stream's last sequence when this publisher started, the one before
	// its first message.
	startSeq uint64
	// pendingSnap holds the newest snapshot waiting to be stored (one at most: a newer one
	// replaces it); snapDone is closed when the storing goroutine stopped.
	pendingSnap chan snapshotJob
	snapDone    chan struct{}

	mu  sync.Mutex
	st  PublisherStatus
	seq uint64 // advances observed (each gets the next number, dropped ones too)
	// snapSeq is the advance of the newest stored snapshot.
	snapSeq uint64

	flush     time.Duration // how long Close keeps publishing (closeFlush; shorter in tests)
	closing   chan struct{} // closed by Close: publish what is queued, then stop
	abort     chan struct{} // closed closeFlush after Close: stop retrying
	done      chan struct{}
	closeOnce sync.Once
}

// Publish starts publishing the stage's advances (docs/replication.md).
func Publish(s *core.Stage, opt PublishOptions) (_ *Publisher, err error) {
	name := opt.Name
	if name == "" {
		name = s.Name
	}
	n, err := namesOf(name)
	if err != nil {
		return nil, err
	}
	if opt.URL != "" && opt.StorageDir != "" {
		return nil, fmt.Errorf("storage_dir %q applies to the embedded server only, not to url %s", opt.StorageDir, redact(opt.URL))
	}
	if opt.Queue < 0 {
		return nil, fmt.Errorf("queue %d is negative", opt.Queue)
	}
	if opt.MaxMsgs < 0 || opt.MaxBytes < 0 || opt.MaxAge < 0 || opt.SnapshotEvery < 0 {
		return nil, fmt.Errorf("max_msgs %d, max_bytes %d, max_age %s, snapshot_every %d: none may be negative", opt.MaxMsgs, opt.MaxBytes, opt.MaxAge, opt.SnapshotEvery)
	}
	if opt.Queue == 0 {
		opt.Queue = 64
	}
	p := &Publisher{n: n, stage: s, every: opt.SnapshotEvery, pendingSnap: make(chan snapshotJob, 1), snapDone: make(chan struct{}), flush: closeFlush, memo: pathMemo{}, queue: make(chan queued, opt.Queue), closing: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	url := opt.URL
	if url == "" {
		if p.emb, err = StartEmbedded(opt.StorageDir); err != nil {
			return nil, err
		}
		url = p.emb.URL()
	}
	if p.nc, err = connect(url); err != nil {
		return nil, err
	}
	p.st.URL, p.st.Stream = redact(url), n.stream
	p.limit = int(p.nc.MaxPayload()) - 4096 // room for the headers
	if p.js, err = jetstream.New(p.nc, jetstream.WithPublishAsyncTimeout(ackTimeout)); err != nil {
		return nil, fmt.Errorf("JetStream on %s: %w", p.st.URL, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.createStreams(ctx, opt); err != nil {
		return nil, err
	}
	if err := p.claim(ctx, opt.Takeover); err != nil {
		return nil, err
	}
	info, err := p.stream.Info(ctx)
	if err != nil {
		p.unclaim()
		return nil, fmt.Errorf("stream %s on %s: %w", n.stream, p.st.URL, err)
	}
	p.startSeq = info.State.LastSeq
	if p.detach, err = s.ObserveAdvances(p.observe); err != nil {
		p.unclaim()
		return nil, err
	}
	go p.run()
	go p.storeSnapshots()
	return p, nil
}

// createStreams creates (or updates) the data stream with its limits, the claim's stream and
// the snapshot store.
func (p *Publisher) createStreams(ctx context.Context, opt PublishOptions) (err error) {
	p.stream, err = p.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: p.n.stream,
		Subjects: []string{p.n.data, p.n.floor}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
		MaxMsgs: limitOrNone(opt.MaxMsgs), MaxBytes: limitOrNone(opt.MaxBytes), MaxAge: opt.MaxAge})
	if err != nil {
		return fmt.Errorf("creating stream %s on %s (is JetStream enabled?): %w", p.n.stream, p.st.URL, err)
	}
	p.owners, err = p.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: p.n.ownerStream,
		Subjects: []string{p.n.owner}, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("creating stream %s on %s: %w", p.n.ownerStream, p.st.URL, err)
	}
	p.snaps, err = p.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: p.n.snapshots, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("creating object store %s on %s: %w", p.n.snapshots, p.st.URL, err)
	}
	return nil
}

// limitOrNone maps 0 (no limit) to JetStream's -1.
func limitOrNone(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// newEpoch names one publisher incarnation: replicas tell a restarted publisher's advance
// numbers from the previous one's by it.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claim records this publisher as the name's owner: the owner subject must be empty (or is
// purged first, with takeover).
func (p *Publisher) claim(ctx context.Context, takeover bool) error {
	p.epoch = newEpoch()
	if takeover {
		if err := p.owners.Purge(ctx); err != nil {
			return fmt.Errorf("taking over stream %s: %w", p.n.stream, err)
		}
	}
	_, err := p.js.Publish(ctx, p.n.owner, []byte(p.epoch), jetstream.WithExpectLastSequencePerSubject(0))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return fmt.Errorf("stage name %q is already published on %s (stream %s has a publisher): close that publisher, choose another name, or take over the name", p.n.stage, p.st.URL, p.n.stream)
	}
	if err != nil {
		return fmt.Errorf("claiming stage name %q on %s: %w", p.n.stage, p.st.URL, err)
	}
	return nil
}

// unclaim drops the owner record (best effort: a server that is gone keeps it, and the next
// publisher takes over).
func (p *Publisher) unclaim() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.owners.Purge(ctx)
}

// observe runs in the stage's advance op: it queues the advance without waiting.
func (p *Publisher) observe(adv core.SealedAdvance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.st.SealedOrdinal = adv.Ordinal
	if p.every > 0 && (p.seq+1)%uint64(p.every) == 0 {
		_ = p.stage.RequestSealedState() // the next advance carries the state to snapshot
	}
	select {
	case p.queue <- queued{seq: p.seq, nanos: time.Now().UnixNano(), adv: adv}:
	default:
		p.st.Dropped++
		p.st.LastError = fmt.Sprintf("advance to %d dropped: %d advances already wait to be published (replicas stop at the gap)", adv.Ordinal, cap(p.queue))
	}
}

// closeFlush bounds how long Close keeps publishing what is queued.
const closeFlush = 5 * time.Second

// ackTimeout bounds the wait for the server's acknowledgement of one message.
const ackTimeout = 5 * time.Second

// The publishing window: messages sent and not acknowledged yet, at most this many and this
// many bytes. Several advances are in flight at once; order holds because every message
// expects the stream's last sequence to be the one before it (docs/replication.md,
// "Publisher").
const (
	windowMessages = 64
	windowBytes    = 64 << 20
)

// flight is one message sent and not acknowledged yet; adv is set on an advance's floor
// message, the last of the advance: its acknowledgement completes the advance.
type flight struct {
	m      message
	future jetstream.PubAckFuture
	adv    *sentAdvance
}

// sentAdvance is what an advance adds to the status once the server stored it.
type sentAdvance struct {
	ordinal uint64
	bytes   int
}

// window is the publishing goroutine's state: the stream's last sequence as this publisher
// knows it (acknowledged or predicted for what is in flight) and the messages in flight.
type window struct {
	last    uint64
	flights []flight
	bytes   int
}

func (w *window) room() bool { return len(w.flights) < windowMessages && w.bytes < windowBytes }

// run publishes queued advances in order until Close, keeping a window of messages in
// flight; a message that fails is published again, in order, until it is stored.
func (p *Publisher) run() {
	defer close(p.done)
	defer func() {
		if r := recover(); r != nil {
			p.setError(fmt.Sprintf("publisher stopped: internal panic: %v", r))
		}
	}()
	w := &window{last: p.startSeq}
	closing, closed := false, p.closing
	for {
		// While the server is away the window takes no more: the queue fills and the
		// producer's next advances are dropped, never waited for.
		var queue <-chan queued
		var recheck <-chan time.Time
		switch {
		case !p.nc.IsConnected():
			recheck = time.After(50 * time.Millisecond)
		case w.room():
			queue = p.queue
		}
		if len(w.flights) == 0 {
			if closing {
				select { // what was queued before Close
				case q := <-p.queue:
					if !p.send(w, q) {
						return
					}
					continue
				default:
					return
				}
			}
			select {
			case q := <-queue:
				if !p.send(w, q) {
					return
				}
			case <-closed:
				closing, closed = true, nil
			case <-recheck:
			}
			continue
		}
		oldest := w.flights[0]
		select {
		case q := <-queue:
			if !p.send(w, q) {
				return
			}
		case <-oldest.future.Ok():
			p.acknowledged(w)
		case err := <-oldest.future.Err():
			if !p.resend(w, err) {
				return
			}
		case <-closed:
			closing, closed = true, nil // stop selecting it
		case <-p.abort:
			return
		case <-recheck:
		}
	}
}

// acknowledged retires the oldest message in flight.
func (p *Publisher) acknowledged(w *window) {
	f := w.flights[0]
	w.flights = w.flights[1:]
	w.bytes -= len(f.m.data)
	if f.adv != nil {
		p.completed(f.adv)
	}
}

// completed adds a stored advance to the status.
func (p *Publisher) completed(a *sentAdvance) {
	p.mu.Lock()
	p.st.Advances++
	p.st.Ordinal = a.ordinal
	p.st.Bytes += uint64(a.bytes)
	p.st.LastError = ""
	p.mu.Unlock()
}

func (p *Publisher) setError(msg string) {
	p.mu.Lock()
	p.st.LastError = msg
	p.mu.Unlock()
}

// send encodes one advance and publishes its messages without waiting for acknowledgements;
// false when Close gave up on it.
func (p *Publisher) send(w *window, q queued) bool {
	msgs, bytes, err := p.encode(q)
	if err != nil {
		p.setError(err.Error())
		return true
	}
	if q.adv.State != nil { // after encode: the memo is the one after this advance
		p.queueSnapshot(q)
	}
	for i, m := range msgs {
		f := flight{m: m}
		if i == len(msgs)-1 {
			f.adv = &sentAdvance{ordinal: q.adv.Ordinal, bytes: bytes}
		}
		fut, err := p.js.PublishAsync(m.subject, m.data, jetstream.WithMsgID(m.id), jetstream.WithExpectLastSequence(w.last))
		w.flights = append(w.flights, f)
		w.bytes += len(m.data)
		if err != nil { // what follows this message waits for the resend
			if !p.resend(w, fmt.Errorf("sending: %w", err)) {
				return false
			}
			continue
		}
		w.flights[len(w.flights)-1].future = fut
		w.last++ // the sequence this message gets once stored
	}
	return true
}

// resend publishes every message in flight again, one at a time and in order, after the
// oldest failed with cause. Later messages in flight expected the failed one before them,
// so the stream stored a prefix of the window at most: the stream's last message tells how
// much (by its message id), the rest is published expecting the stream's actual last
// sequence. Retries back off while the server is away; false when Close gave up.
func (p *Publisher) resend(w *window, cause error) bool {
	backoff := 50 * time.Millisecond
	for len(w.flights) > 0 {
		p.setError(fmt.Sprintf("publishing the advance of message %s: %v (retrying)", w.flights[0].m.id, cause))
		err := p.resendOnce(w)
		if err == nil {
			continue
		}
		cause = err
		select {
		case <-p.abort:
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
	return true
}

// resendOnce syncs with the stream and publishes the oldest message in flight again.
func (p *Publisher) resendOnce(w *window) error {
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	go func() { // Close's bound holds while a request waits for a server that is away
		select {
		case <-p.abort:
			cancel()
		case <-ctx.Done():
		}
	}()
	info, err := p.stream.Info(ctx)
	if err != nil {
		return err
	}
	w.last = info.State.LastSeq
	if w.last > 0 {
		if last, err := p.stream.GetMsg(ctx, w.last); err == nil {
			p.dropStored(w, last.Header.Get(jetstream.MsgIDHeader))
		}
	}
	if len(w.flights) == 0 {
		return nil
	}
	f := w.flights[0]
	ack, err := p.js.Publish(ctx, f.m.subject, f.m.data, jetstream.WithMsgID(f.m.id), jetstream.WithExpectLastSequence(w.last))
	if err != nil {
		return err
	}
	w.last = max(w.last, ack.Sequence)
	p.acknowledged(w)
	return nil
}

// dropStored retires the messages in flight up to the one of id, when the stream holds it.
func (p *Publisher) dropStored(w *window, id string) {
	for i, f := range w.flights {
		if f.m.id == id {
			for range i + 1 {
				p.acknowledged(w)
			}
			return
		}
	}
}

// message is one message to publish, with its deduplication id.
type message struct {
	subject, id string
	data        []byte
}

// encode splits an advance into data messages under the server's payload limit, then its
// floor message.
func (p *Publisher) encode(q queued) ([]message, int, error) {
	var msgs []message
	bytes := 0
	for _, part := range splitPrims(p.epoch, q.seq, q.adv.PrimDeletes, p.limit) { // first: see Replica
		msgs = append(msgs, message{subject: p.n.data, id: fmt.Sprintf("%s.%d.%d", p.epoch, q.seq, len(msgs)), data: part})
	}
	for i := range q.adv.Columns {
		c := &q.adv.Columns[i]
		parts, err := splitColumn(p.epoch, q.seq, c, p.limit, p.memo)
		if err != nil {
			return nil, 0, fmt.Errorf("advance to %d not published: %w", q.adv.Ordinal, err)
		}
		for _, d := range parts {
			msgs = append(msgs, message{subject: p.n.data, id: fmt.Sprintf("%s.%d.%d", p.epoch, q.seq, len(msgs)), data: d})
		}
		bytes += len(c.Values)
	}
	floor := encodeFloor(floorMsg{Epoch: p.epoch, Seq: q.seq, Ordinal: q.adv.Ordinal, Global: q.adv.Global,
		Attributes: q.adv.Attributes, Parts: uint32(len(msgs)), Nanos: q.nanos})
	msgs = append(msgs, message{subject: p.n.floor, id: fmt.Sprintf("%s.%d.f", p.epoch, q.seq), data: floor})
	return msgs, bytes, nil
}

// pathMemo remembers the paths of each (attribute, part) last published, so a message whose
// prims are the same again sends none (dataMsg.SamePaths). nil remembers nothing.
type pathMemo map[memoKey][]string

type memoKey struct {
	attribute string
	part      int
}

// same reports whether paths equal the last ones of key, and remembers them.
func (m pathMemo) same(key memoKey, paths []string) bool {
	if m == nil {
		return false
	}
	prev, ok := m[key]
	m[key] = paths
	return ok && slices.Equal(prev, paths)
}

// splitPrims encodes whole-prim deletes as prims messages of at most limit bytes each.
func splitPrims(epoch string, seq uint64, dels []core.PrimDelete, limit int) [][]byte {
	var out [][]byte
	lo, size := 0, 0
	for i, d := range dels {
		if size+len(d.Path)+24+256 > limit && i > lo {
			out = append(out, encodePrims(primsMsg{Epoch: epoch, Seq: seq, Deletes: dels[lo:i]}))
			lo, size = i, 0
		}
		size += len(d.Path) + 24
	}
	if len(dels) > lo {
		out = append(out, encodePrims(primsMsg{Epoch: epoch, Seq: seq, Deletes: dels[lo:]}))
	}
	return out
}

// splitColumn encodes c as data messages of at most limit bytes each.
func splitColumn(epoch string, seq uint64, c *core.ColumnChanges, limit int, memo pathMemo) ([][]byte, error) {
	elem := c.DType.ElemBytes()
	var out [][]byte
	lo, vlo, llo := 0, 0, 0
	size := 0
	v, l := 0, 0 // value offset and length index at entry i
	flush := func(hi int) {
		same := memo.same(memoKey{c.Attribute, len(out)}, c.Paths[lo:hi])
		out = append(out, encodeData(epoch, seq, len(out), same, c, lo, hi, vlo, v, llo, l))
	}
	for i := range c.Paths {
		entry := len(c.Paths[i]) + 24
		vbytes := 0
		if !c.Deleted[i] {
			vbytes = elem
			if c.IsArray {
				vbytes = int(c.Lengths[l]) * elem
			}
		}
		if c.Tokens != nil { // the token strings travel too
			for _, t := range c.Tokens[v/8 : (v+vbytes)/8] {
				entry += len(t) + 2
			}
		}
		if entry+vbytes+256 > limit {
			return nil, fmt.Errorf("%s: the value of %s (%d bytes) exceeds the server's message limit of %d bytes", c.Attribute, c.Paths[i], vbytes, limit)
		}
		if size+entry+vbytes+256 > limit && i > lo {
			flush(i)
			lo, vlo, llo, size = i, v, l, 0
		}
		size += entry + vbytes
		if !c.Deleted[i] {
			v += vbytes
			if c.IsArray {
				l++
			}
		}
	}
	flush(len(c.Paths))
	return out, nil
}

// URL is the server's client URL (credentials redacted).
func (p *Publisher) URL() string { return p.st.URL }

// Status is a snapshot of the publisher's progress.
func (p *Publisher) Status() PublisherStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	st.Queued = len(p.queue)
	st.Connected = p.nc.IsConnected()
	return st
}

// Close stops observing the stage, publishes what is queued (for at most a few seconds),
// drops the name's claim and disconnects; the embedded server, if any, stops.
func (p *Publisher) Close() {
	p.closeOnce.Do(func() {
		p.detach()
		close(p.closing)
		stop := time.AfterFunc(p.flush, func() { close(p.abort) })
		<-p.done
		<-p.snapDone
		if stop.Stop() {
			close(p.abort)
		}
		if p.nc.IsConnected() {
			p.unclaim()
		}
		p.release()
	})
}

// release closes the connection and the embedded server.
func (p *Publisher) release() {
	if p.nc != nil {
		p.nc.Close()
	}
	if p.emb != nil {
		p.emb.Shutdown()
	}
}
