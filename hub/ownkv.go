package hub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ownKV is a bucket as a box reaches it: its own keys only, without the
// stream's info. jetstream's KeyValue asks for that info first, and the
// info request may list every subject in the stream (every box's request
// ids), so a box may not make it; everything a box does with a bucket
// (get, put, create, delete its keys; watch its decisions) goes to the
// key's own subject instead, which its permissions name.
//
// What a box may not do (list keys, purge, read the status) is refused
// here with errBoxBucket, as the hub would refuse it.
type ownKV struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	legacy nats.JetStreamContext // the watch's ordered push consumer, as jetstream's own KeyValue makes it
	bucket string
}

var _ jetstream.KeyValue = (*ownKV)(nil)

// errBoxBucket says a box asked for more of a bucket than its keys.
var errBoxBucket = errors.New("a box reaches only its own keys of the hub's buckets")

func newOwnKV(nc *nats.Conn, bucket string) (*ownKV, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	legacy, err := nc.JetStream()
	if err != nil {
		return nil, err
	}
	return &ownKV{nc: nc, js: js, legacy: legacy, bucket: bucket}, nil
}

func (kv *ownKV) subject(key string) string { return "$KV." + kv.bucket + "." + key }

// Bucket implements jetstream.KeyValue.
func (kv *ownKV) Bucket() string { return kv.bucket }

// Get implements jetstream.KeyValue: the key's last value, by a direct
// get of its subject.
func (kv *ownKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := kv.last(ctx, key)
	if err != nil {
		return nil, err
	}
	if e.op != jetstream.KeyValuePut {
		return nil, jetstream.ErrKeyNotFound
	}
	return e, nil
}

// last is the key's last message, a delete marker too.
func (kv *ownKV) last(ctx context.Context, key string) (*ownEntry, error) {
	if !validKey(key) {
		return nil, jetstream.ErrInvalidKey
	}
	m, err := kv.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+kv.bucket+"."+kv.subject(key), nil)
	if err != nil {
		return nil, err
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404":
		return nil, jetstream.ErrKeyNotFound
	default:
		return nil, fmt.Errorf("hub: get %s/%s: status %s %s", kv.bucket, key, status, m.Header.Get("Description"))
	}
	seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("hub: get %s/%s: no sequence in the answer", kv.bucket, key)
	}
	created, _ := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
	return &ownEntry{bucket: kv.bucket, key: key, value: m.Data, revision: seq, created: created, op: kvOp(m.Header)}, nil
}

// kvOp is what a bucket's message does to its key.
func kvOp(h nats.Header) jetstream.KeyValueOp {
	switch h.Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	if h.Get(jetstream.MarkerReasonHeader) != "" {
		return jetstream.KeyValuePurge
	}
	return jetstream.KeyValuePut
}

// GetRevision implements jetstream.KeyValue: refused (a box reads a key's
// last value only).
func (kv *ownKV) GetRevision(context.Context, string, uint64) (jetstream.KeyValueEntry, error) {
	return nil, errBoxBucket
}

// Put implements jetstream.KeyValue.
func (kv *ownKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return kv.publish(ctx, key, value, nil)
}

// PutString implements jetstream.KeyValue.
func (kv *ownKV) PutString(ctx context.Context, key, value string) (uint64, error) {
	return kv.Put(ctx, key, []byte(value))
}

// Create implements jetstream.KeyValue: the key's first value, or the
// first since it was deleted.
func (kv *ownKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if len(opts) > 0 {
		return 0, errBoxBucket
	}
	rev, err := kv.Update(ctx, key, value, 0)
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return rev, err
	}
	if e, lerr := kv.last(ctx, key); lerr == nil && e.op != jetstream.KeyValuePut {
		return kv.Update(ctx, key, value, e.revision)
	}
	return 0, err
}

// Update implements jetstream.KeyValue: value, if the key's last
// revision is revision (0: the key has none).
func (kv *ownKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	h := nats.Header{}
	h.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(revision, 10))
	rev, err := kv.publish(ctx, key, value, h)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return 0, fmt.Errorf("%w: %w", jetstream.ErrKeyExists, err)
	}
	return rev, err
}

// Delete implements jetstream.KeyValue: a delete marker for the key.
func (kv *ownKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if len(opts) > 0 {
		return errBoxBucket
	}
	h := nats.Header{}
	h.Set("KV-Operation", "DEL")
	_, err := kv.publish(ctx, key, nil, h)
	return err
}

func (kv *ownKV) publish(ctx context.Context, key string, value []byte, h nats.Header) (uint64, error) {
	if !validKey(key) {
		return 0, jetstream.ErrInvalidKey
	}
	ack, err := kv.js.PublishMsg(ctx, &nats.Msg{Subject: kv.subject(key), Header: h, Data: value})
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// validKey reports whether key is a literal key (no wildcard, no empty
// token).
func validKey(key string) bool {
	if key == "" || strings.ContainsAny(key, "*> \t\r\n") {
		return false
	}
	for _, t := range strings.Split(key, ".") {
		if t == "" {
			return false
		}
	}
	return true
}

// Purge implements jetstream.KeyValue: refused.
func (kv *ownKV) Purge(context.Context, string, ...jetstream.KVDeleteOpt) error { return errBoxBucket }

// Watch implements jetstream.KeyValue with no options (kvWatch resumes a
// box's watch through watchFrom).
func (kv *ownKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if len(opts) > 0 {
		return nil, errBoxBucket
	}
	return kv.watchFrom(ctx, keys, 0)
}

// WatchAll implements jetstream.KeyValue: refused.
func (kv *ownKV) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, errBoxBucket
}

// WatchFiltered implements jetstream.KeyValue: refused.
func (kv *ownKV) WatchFiltered(context.Context, []string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, errBoxBucket
}

// Keys implements jetstream.KeyValue: refused.
func (kv *ownKV) Keys(context.Context, ...jetstream.WatchOpt) ([]string, error) {
	return nil, errBoxBucket
}

// ListKeys implements jetstream.KeyValue: refused.
func (kv *ownKV) ListKeys(context.Context, ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	return nil, errBoxBucket
}

// ListKeysFiltered implements jetstream.KeyValue: refused.
func (kv *ownKV) ListKeysFiltered(context.Context, ...string) (jetstream.KeyLister, error) {
	return nil, errBoxBucket
}

// History implements jetstream.KeyValue: refused.
func (kv *ownKV) History(context.Context, string, ...jetstream.WatchOpt) ([]jetstream.KeyValueEntry, error) {
	return nil, errBoxBucket
}

// PurgeDeletes implements jetstream.KeyValue: refused.
func (kv *ownKV) PurgeDeletes(context.Context, ...jetstream.KVPurgeOpt) error { return errBoxBucket }

// Status implements jetstream.KeyValue: refused (the stream's info).
func (kv *ownKV) Status(context.Context) (jetstream.KeyValueStatus, error) { return nil, errBoxBucket }

// watchFrom watches keys (a filter the box's permissions name): from 0,
// each key's last value, a nil entry, then every change; from a revision,
// every message from that revision on, then nil, then every change. It
// is jetstream's own watch (an ordered push consumer bound to the stream,
// so that no info is asked for), made here.
func (kv *ownKV) watchFrom(ctx context.Context, keys string, from uint64) (jetstream.KeyWatcher, error) {
	pre := "$KV." + kv.bucket + "."
	w := &ownWatcher{updates: make(chan jetstream.KeyValueEntry, 256)}
	update := func(m *nats.Msg) {
		md, err := m.Metadata()
		if err != nil || len(m.Subject) <= len(pre) {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.updates <- &ownEntry{bucket: kv.bucket, key: m.Subject[len(pre):], value: m.Data,
			revision: md.Sequence.Stream, created: md.Timestamp, delta: md.NumPending, op: kvOp(m.Header)}
		if !w.initDone {
			w.received++
			if w.received >= w.initPending || md.NumPending == 0 {
				w.initDone = true
				w.updates <- nil
			}
		}
	}
	opts := []nats.SubOpt{nats.BindStream("KV_" + kv.bucket), nats.OrderedConsumer(), nats.Context(ctx)}
	if from > 0 {
		opts = append(opts, nats.StartSequence(from))
	} else {
		opts = append(opts, nats.DeliverLastPerSubject())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sub, err := kv.legacy.Subscribe(pre+keys, update, opts...)
	if err != nil {
		return nil, err
	}
	sub.SetClosedHandler(func(string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		close(w.updates)
	})
	if pending, err := sub.InitialConsumerPending(); err == nil {
		if pending == 0 {
			w.initDone = true
			w.updates <- nil
		} else {
			w.initPending = pending
		}
	}
	w.sub = sub
	return w, nil
}

// ownWatcher is a watch watchFrom made.
type ownWatcher struct {
	mu          sync.Mutex
	updates     chan jetstream.KeyValueEntry
	sub         *nats.Subscription
	initDone    bool
	initPending uint64
	received    uint64
}

// Updates implements jetstream.KeyWatcher.
func (w *ownWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop implements jetstream.KeyWatcher.
func (w *ownWatcher) Stop() error { return w.sub.Unsubscribe() }

// ownEntry is a key's value (or delete marker) as a box reads it.
type ownEntry struct {
	bucket, key string
	value       []byte
	revision    uint64
	created     time.Time
	delta       uint64
	op          jetstream.KeyValueOp
}

func (e *ownEntry) Bucket() string                  { return e.bucket }
func (e *ownEntry) Key() string                     { return e.key }
func (e *ownEntry) Value() []byte                   { return e.value }
func (e *ownEntry) Revision() uint64                { return e.revision }
func (e *ownEntry) Created() time.Time              { return e.created }
func (e *ownEntry) Delta() uint64                   { return e.delta }
func (e *ownEntry) Operation() jetstream.KeyValueOp { return e.op }
