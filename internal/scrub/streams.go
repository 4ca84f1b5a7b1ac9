package scrub

import (
	"sync"
	"time"
)

// Streams keeps, in one server process, the sensitive values of each
// running attempt and the carries of its output streams, so that a value
// split between two chunks is hidden. Its zero value is ready to use.
//
// An agent sends an attempt's chunks one after another, through one
// server as long as its connection holds; a chunk that reaches another
// server starts there without the carry: a value split exactly there is
// hidden only in part (its held beginning is dropped by the first server,
// its end passed on by the second).
type Streams struct {
	mu      sync.Mutex
	m       map[attemptKey]*attempt
	sweptAt time.Time
}

type attemptKey struct {
	task    string
	attempt int
}

type attempt struct {
	mu      sync.Mutex
	set     *Set
	carries map[string]*Carry
	used    time.Time
}

const (
	// idle is how long an attempt's entry lasts unused: longer than a
	// task's output is silent in practice, and a lost carry only drops
	// what it held.
	idle = 10 * time.Minute
	// maxAttempts bounds the entries; past it they are all forgotten
	// rather than grow without bound.
	maxAttempts = 100_000
)

// Chunk scrubs the next chunk of an attempt's stream. load gives the
// attempt's values the first time they are needed; they are kept with the
// attempt's carries.
func (st *Streams) Chunk(task string, attemptNo int, stream, chunk string, load func() (*Set, error)) (string, error) {
	a := st.entry(task, attemptNo)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set == nil {
		set, err := load()
		if err != nil {
			return "", err
		}
		a.set = set
	}
	c := a.carries[stream]
	if c == nil {
		c = &Carry{}
		a.carries[stream] = c
	}
	return a.set.Stream(c, chunk), nil
}

// Done forgets an attempt and returns its values, nil when it had none
// here (its output went through another server, or there was none).
func (st *Streams) Done(task string, attemptNo int) *Set {
	st.mu.Lock()
	a := st.m[attemptKey{task, attemptNo}]
	delete(st.m, attemptKey{task, attemptNo})
	st.mu.Unlock()
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set
}

func (st *Streams) entry(task string, attemptNo int) *attempt {
	now := time.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.m == nil || len(st.m) >= maxAttempts {
		st.m = map[attemptKey]*attempt{}
	}
	if now.Sub(st.sweptAt) > time.Minute {
		st.sweptAt = now
		for k, a := range st.m {
			if now.Sub(a.used) > idle {
				delete(st.m, k)
			}
		}
	}
	k := attemptKey{task, attemptNo}
	a := st.m[k]
	if a == nil {
		a = &attempt{carries: map[string]*Carry{}}
		st.m[k] = a
	}
	a.used = now
	return a
}
