package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hub hands the events on the Redis channel to this server's subscribers.
// A subscriber that does not keep up loses events rather than slow anyone:
// its buffer is bounded, and its Lagged flag tells it to re-read state.
type Hub struct {
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
	ready   chan struct{}

	// last is the stream id of the newest event dispatched: events come
	// from the stream and, on the relaying server, from the relay itself,
	// whichever is first.
	lastMu  sync.Mutex
	last    streamID
	live    bool // last is set
	started bool // a run set last: a run after it goes on from there

	readyOnce sync.Once

	// publishing is held by this server's relay while it adds a round to
	// the stream and hands it over (relayed). The stream reader, finding
	// an entry not dispatched yet, waits for it: the entry was most often
	// the relay's, which the reader's XREAD had been woken by first, and
	// decoding it was wasted.
	publishing sync.Mutex
	// decoded counts the entries the stream reader decoded (tests).
	decoded atomic.Int64

	mu        sync.RWMutex
	byCluster map[string]map[*Sub]struct{}
	byJob     map[string]map[*Sub]struct{}
	all       map[*Sub]struct{} // subscribers of every event (the engine)
	logs      map[string]map[*LogSub]struct{}
	agents    map[*AgentSub]struct{}

	// Published counts events handed to subscribers; Dropped those lost to
	// full buffers.
	Published, Dropped atomic.Int64
}

// Sub is one subscription.
type Sub struct {
	C      chan Event
	lagged atomic.Bool
	// lost wakes a subscriber whose events were dropped: a burst that ends
	// on dropped events leaves nothing in C to tell it to re-read.
	lost chan struct{}
	key  string
	job  bool
}

func newSub(buffer int) *Sub { return &Sub{C: make(chan Event, buffer), lost: make(chan struct{}, 1)} }

// Lagged reports, and clears, whether events were dropped since the last
// call.
func (s *Sub) Lagged() bool { return s.lagged.Swap(false) }

// Lost is ready when events were dropped since the subscriber last looked:
// a subscriber waiting on C waits on it too, and re-reads state (Lagged)
// even when no further event comes.
func (s *Sub) Lost() <-chan struct{} { return s.lost }

// NewHub returns a hub for the channel of prefix; Run starts it.
func NewHub(rdb redis.UniversalClient, prefix string, log *slog.Logger) *Hub {
	return &Hub{rdb: rdb, channel: Channel(prefix), log: log, ready: make(chan struct{}),
		byCluster: map[string]map[*Sub]struct{}{}, byJob: map[string]map[*Sub]struct{}{}, all: map[*Sub]struct{}{},
		logs: map[string]map[*LogSub]struct{}{}, agents: map[*AgentSub]struct{}{}}
}

// Ready is closed once the hub listens: events published after that reach
// it.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Run listens until ctx ends: events from the stream, task output and
// agent changes from pub/sub.
func (h *Hub) Run(ctx context.Context) error {
	ps := h.rdb.Subscribe(ctx, h.channel+":logs", h.channel+":agents")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// Start after the newest event: older ones are history, later ones
	// are read in order even across reconnections. A hub run again after
	// a failure goes on after the last event it dispatched, so that its
	// subscribers miss none (task output and agent changes, on pub/sub,
	// sent in between are lost).
	h.lastMu.Lock()
	resumed, last := h.started, h.last.String()
	h.lastMu.Unlock()
	if !resumed {
		last = "0-0"
		msgs, err := h.rdb.XRevRangeN(ctx, h.channel, "+", "-", 1).Result()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(msgs) > 0 {
			last = msgs[0].ID
		}
	}
	start, err := parseStreamID(last)
	if err != nil {
		return fmt.Errorf("events: stream id %q: %w", last, err)
	}
	h.lastMu.Lock()
	h.last, h.live, h.started = start, true, true
	h.lastMu.Unlock()
	defer func() {
		h.lastMu.Lock()
		h.live = false
		h.lastMu.Unlock()
	}()
	h.readyOnce.Do(func() { close(h.ready) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.readStream(ctx, last)
	}()
	defer func() { <-done }()
	ch := ps.Channel(redis.WithChannelSize(4096))
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			if m.Channel == h.channel+":agents" {
				var a AgentEvent
				if err := json.Unmarshal([]byte(m.Payload), &a); err == nil {
					h.dispatchAgent(a)
				}
				continue
			}
			var l LogLine
			if err := json.Unmarshal([]byte(m.Payload), &l); err == nil {
				h.dispatchLog(l)
			}
		}
	}
}

// readBatch is how many entries the stream reader asks for at once; a
// full batch means it is behind.
const readBatch = 100

// readStream reads the event stream from after id until ctx ends.
func (h *Hub) readStream(ctx context.Context, id string) {
	// Whether events may have gone before this hub read them: when it
	// starts (a run after a failure goes on from where it stopped) and
	// after a failed read (Redis may have restarted, keeping nothing),
	// from where it stands; after a full batch (it is behind, and
	// trimming may overtake it), from where it stood before that read.
	check := true
	for ctx.Err() == nil {
		if check {
			h.checkMissed(ctx, h.position())
			check = false
		}
		before := h.position()
		res, err := h.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{h.channel, id}, Count: readBatch, Block: time.Second}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("events: read", "err", err)
				check = true
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			continue
		}
		behind := false
		for _, st := range res {
			behind = behind || len(st.Messages) == readBatch
			for _, m := range st.Messages {
				id = m.ID
				sid, err := parseStreamID(m.ID)
				if err != nil {
					h.log.Warn("events: bad entry id", "id", m.ID, "err", err)
					continue
				}
				if h.dispatched(sid) {
					continue // the relay handed it over already: not decoded twice
				}
				h.publishing.Lock()
				//lint:ignore SA2001 waits for the relay's handover
				h.publishing.Unlock()
				if h.dispatched(sid) {
					continue
				}
				h.decoded.Add(1)
				evs, err := entryEvents(m.Values)
				if err != nil {
					// Its events are lost to this server: every subscriber
					// re-reads state, as after falling behind, rather than
					// miss them unawares (the engine resyncs its jobs).
					h.log.Error("events: an entry of the stream cannot be read; subscribers re-read state", "id", m.ID, "err", err)
					h.dispatchNew(sid, nil)
					h.lagAll()
					continue
				}
				h.dispatchNew(sid, evs)
			}
		}
		if behind {
			// Trimming removes the oldest entries first: had it taken
			// any after before, it took before too.
			h.checkMissed(ctx, before)
		}
	}
}

// position is the stream id of the last event dispatched.
func (h *Hub) position() streamID {
	h.lastMu.Lock()
	defer h.lastMu.Unlock()
	if !h.live {
		return streamID{}
	}
	return h.last
}

// checkMissed tells every subscriber to re-read state when events after
// last (an event this hub dispatched) are gone from the stream: trimmed (the
// stream is capped) or lost with Redis's data (a restart of a Redis that
// keeps nothing on disk makes a new stream). Redis answers a read from
// such a position with whatever it still has, without a word.
//
// A check that cannot be made (Redis refusing XINFO to this user, a
// timeout) counts as a loss: the read goes on, and subscribers re-read
// state rather than trust what may have gone.
func (h *Hub) checkMissed(ctx context.Context, last streamID) {
	if last == (streamID{}) {
		return // nothing read yet: nothing to have missed
	}
	info, err := h.rdb.XInfoStream(ctx, h.channel).Result()
	switch {
	case ctx.Err() != nil:
		return
	case err != nil && strings.Contains(err.Error(), "no such key"):
		h.log.Warn("events: the event stream is gone (Redis restarted or flushed?): subscribers re-read state", "last", last.String())
		h.lagAll()
	case err != nil:
		h.log.Warn("events: cannot tell whether events were lost (stream info): subscribers re-read state", "last", last.String(), "err", err)
		h.lagAll()
	default:
		if why := missedSince(last, info); why != "" {
			h.log.Warn("events: events were lost before this server read them: subscribers re-read state", "why", why, "last", last.String())
			h.lagAll()
		}
	}
}

// missedSince says why entries after last may be gone from the stream
// info describes, or "" when none are. Trimming does not count as
// deleting in Redis's stream info, so a last entry that is no longer the
// stream's (older than its first) counts as lost ground: it errs on a
// needless re-read when trimming ended exactly at it.
func missedSince(last streamID, info *redis.XInfoStream) string {
	parse := func(s string) (streamID, bool) {
		id, err := parseStreamID(s)
		return id, err == nil
	}
	if deleted, ok := parse(info.MaxDeletedEntryID); ok && last.less(deleted) {
		return "entries after the last event read were deleted"
	}
	newest, ok := parse(info.LastGeneratedID)
	if ok && newest.less(last) {
		return "the stream was made anew after the last event read"
	}
	if first, ok := parse(info.FirstEntry.ID); ok && last.less(first) {
		return "the stream was trimmed, or made anew, past the last event read"
	}
	if info.Length == 0 && ok && last.less(newest) {
		return "entries after the last event read were trimmed"
	}
	return ""
}

// relayed dispatches what this server's relay just added to the stream,
// the entry id, when the entry before it (prev) is the last this hub
// dispatched. Otherwise the stream reader has not caught up (with entries
// another server's relay added, say) and delivers them all in order.
func (h *Hub) relayed(prev, id string, evs []Event) {
	p, err := parseStreamID(prev)
	if err != nil {
		return
	}
	sid, err := parseStreamID(id)
	if err != nil {
		return
	}
	h.lastMu.Lock()
	defer h.lastMu.Unlock()
	if !h.live || h.last != p {
		return
	}
	h.last = sid
	for _, ev := range evs {
		h.dispatch(ev)
	}
}

// dispatched reports whether the event at id, or a later one, was
// dispatched.
func (h *Hub) dispatched(id streamID) bool {
	h.lastMu.Lock()
	defer h.lastMu.Unlock()
	return h.live && !h.last.less(id)
}

// dispatchNew dispatches the events of the entry at id unless it, or a
// later one, was: each event once, in the stream's order (the stream
// reader's way; relayed is the relay's).
func (h *Hub) dispatchNew(id streamID, evs []Event) {
	h.lastMu.Lock()
	defer h.lastMu.Unlock()
	if !h.live || !h.last.less(id) {
		return
	}
	h.last = id
	for _, ev := range evs {
		h.dispatch(ev)
	}
}

// streamID is a Redis stream entry id, milliseconds-sequence.
type streamID struct{ ms, seq uint64 }

func parseStreamID(s string) (streamID, error) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, errors.New("not ms-seq")
	}
	var id streamID
	var err error
	if id.ms, err = strconv.ParseUint(ms, 10, 64); err != nil {
		return streamID{}, err
	}
	if id.seq, err = strconv.ParseUint(seq, 10, 64); err != nil {
		return streamID{}, err
	}
	return id, nil
}

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

func (a streamID) less(b streamID) bool {
	return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq
}

func (h *Hub) dispatch(ev Event) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	send := func(subs map[*Sub]struct{}) {
		for s := range subs {
			select {
			case s.C <- ev:
				h.Published.Add(1)
			default:
				s.lagged.Store(true)
				h.Dropped.Add(1)
				select {
				case s.lost <- struct{}{}:
				default:
				}
			}
		}
	}
	if ev.Cluster != "" {
		send(h.byCluster[ev.Cluster])
	}
	if ev.Job != "" {
		send(h.byJob[ev.Job])
	}
	send(h.all)
}

// lagAll tells every subscriber that events were lost, and wakes it.
func (h *Hub) lagAll() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	mark := func(subs map[*Sub]struct{}) {
		for s := range subs {
			s.lagged.Store(true)
			select {
			case s.lost <- struct{}{}:
			default:
			}
		}
	}
	for _, subs := range h.byCluster {
		mark(subs)
	}
	for _, subs := range h.byJob {
		mark(subs)
	}
	mark(h.all)
}

// SubscribeCluster subscribes to a cluster's events; buffer bounds what a
// slow reader may fall behind by.
func (h *Hub) SubscribeCluster(id string, buffer int) *Sub {
	return h.subscribe(h.byCluster, id, buffer, false)
}

// SubscribeJob subscribes to a job's events.
func (h *Hub) SubscribeJob(id string, buffer int) *Sub { return h.subscribe(h.byJob, id, buffer, true) }

// SubscribeAll subscribes to every event.
func (h *Hub) SubscribeAll(buffer int) *Sub {
	s := newSub(buffer)
	h.mu.Lock()
	h.all[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *Hub) subscribe(m map[string]map[*Sub]struct{}, key string, buffer int, job bool) *Sub {
	s := newSub(buffer)
	s.key, s.job = key, job
	h.mu.Lock()
	defer h.mu.Unlock()
	if m[key] == nil {
		m[key] = map[*Sub]struct{}{}
	}
	m[key][s] = struct{}{}
	return s
}

// Subscribers counts the cluster, job, all-event and agent subscriptions,
// for tests and metrics.
func (h *Hub) Subscribers() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := len(h.all) + len(h.agents)
	for _, m := range []map[string]map[*Sub]struct{}{h.byCluster, h.byJob} {
		for _, subs := range m {
			n += len(subs)
		}
	}
	return n
}

// Unsubscribe ends a subscription.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.key == "" {
		delete(h.all, s)
		return
	}
	m := h.byCluster
	if s.job {
		m = h.byJob
	}
	delete(m[s.key], s)
	if len(m[s.key]) == 0 {
		delete(m, s.key)
	}
}

// LogLine is a chunk of a running task's output.
type LogLine struct {
	Task    string  `json:"task"`
	Attempt int     `json:"attempt"`
	Seq     int     `json:"seq"`
	Stream  string  `json:"stream"` // stdout, stderr or status
	Chunk   string  `json:"chunk"`
	Percent float64 `json:"percent,omitempty"`
}

// LogSub is a subscription to one task's output.
type LogSub struct {
	C      chan LogLine
	lagged atomic.Bool
	task   string
}

// Lagged reports, and clears, whether lines were dropped.
func (s *LogSub) Lagged() bool { return s.lagged.Swap(false) }

// PublishLog sends a line to every server's subscribers of the task.
func (h *Hub) PublishLog(ctx context.Context, l LogLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return h.rdb.Publish(ctx, h.channel+":logs", b).Err()
}

// SubscribeLog subscribes to a task's output.
func (h *Hub) SubscribeLog(task string, buffer int) *LogSub {
	s := &LogSub{C: make(chan LogLine, buffer), task: task}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logs[task] == nil {
		h.logs[task] = map[*LogSub]struct{}{}
	}
	h.logs[task][s] = struct{}{}
	return s
}

// UnsubscribeLog ends a log subscription.
func (h *Hub) UnsubscribeLog(s *LogSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.logs[s.task], s)
	if len(h.logs[s.task]) == 0 {
		delete(h.logs, s.task)
	}
}

func (h *Hub) dispatchLog(l LogLine) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.logs[l.Task] {
		select {
		case s.C <- l:
		default:
			s.lagged.Store(true)
		}
	}
}

// AgentEvent is a change of an agent: REGISTERED, HEARTBEAT or LOST.
type AgentEvent struct {
	Agent    string    `json:"agent"`
	Kind     string    `json:"kind"`
	Capacity int       `json:"capacity,omitempty"`
	Busy     int       `json:"busy"`
	At       time.Time `json:"at"`
}

// AgentSub is a subscription to agent events.
type AgentSub struct {
	C      chan AgentEvent
	lagged atomic.Bool
}

// Lagged reports, and clears, whether events were dropped.
func (s *AgentSub) Lagged() bool { return s.lagged.Swap(false) }

// PublishAgent sends an agent event to every server's subscribers.
func (h *Hub) PublishAgent(ctx context.Context, a AgentEvent) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return h.rdb.Publish(ctx, h.channel+":agents", b).Err()
}

// SubscribeAgents subscribes to agent events.
func (h *Hub) SubscribeAgents(buffer int) *AgentSub {
	s := &AgentSub{C: make(chan AgentEvent, buffer)}
	h.mu.Lock()
	h.agents[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// UnsubscribeAgents ends an agent subscription.
func (h *Hub) UnsubscribeAgents(s *AgentSub) {
	h.mu.Lock()
	delete(h.agents, s)
	h.mu.Unlock()
}

func (h *Hub) dispatchAgent(a AgentEvent) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.agents {
		select {
		case s.C <- a:
		default:
			s.lagged.Store(true)
		}
	}
}
