package graph

import (
	"testing"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/events"
)

func TestRecent(t *testing.T) {
	for _, tc := range []struct {
		name string
		seqs []int64
		want []bool
	}{
		{"in order", []int64{1, 2, 3}, []bool{true, true, true}},
		{"the latest again", []int64{1, 2, 2}, []bool{true, true, false}},
		{"an older one again", []int64{5, 6, 7, 5, 6}, []bool{true, true, true, false, false}},
		{"a new one below the highest", []int64{5, 7, 6, 6}, []bool{true, true, true, false}},
		{"a replay of a run", []int64{1, 2, 3, 4, 2, 3, 4, 5}, []bool{true, true, true, true, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recent
			for i, seq := range tc.seqs {
				if got := r.first(seq); got != tc.want[i] {
					t.Errorf("seq %d (#%d): first = %v, want %v", seq, i, got, tc.want[i])
				}
			}
		})
	}
	// Only the last len(ring) are remembered.
	var r recent
	for seq := int64(1); seq <= 2000; seq++ {
		r.first(seq)
	}
	if !r.first(2000 - int64(len(r.ring))) { // just before the ring's oldest
		t.Error("a number older than the ring was taken for a repeat")
	}
	if r.first(2000) {
		t.Error("the latest number was taken as new")
	}
}

// What jobProgress sends for one event, by whether the last read saw it
// and whether events were dropped before it.
func TestJobStreamEvent(t *testing.T) {
	snap := func(s string) events.Snapshot {
		sn, err := events.ParseSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}
	cases := []struct {
		name   string
		ev     events.Event
		lagged bool
		// want: "" nothing, else the kind sent; done its count; lag its flag.
		want    model.EventKind
		done    int
		lag     bool
		rereads int
	}{
		{"a new change", events.Event{Seq: 5, Kind: "task", Task: "a", State: "COMPLETE", Txid: 150}, false, model.EventKindTask, 1, false, 0},
		{"a change the last read saw", events.Event{Seq: 5, Kind: "task", Task: "a", State: "COMPLETE", Txid: 50}, false, "", 0, false, 0},
		// The buffer held only changes the last read saw, and those after
		// them were dropped: the lag goes out with a fresh read, not lost.
		{"a change the last read saw, after drops", events.Event{Seq: 5, Kind: "task", Task: "a", State: "COMPLETE", Txid: 50}, true, model.EventKindSnapshot, 2, true, 1},
		{"a new change, after drops, that the re-read saw", events.Event{Seq: 5, Kind: "task", Task: "a", State: "COMPLETE", Txid: 150}, true, model.EventKindSnapshot, 2, true, 1},
		{"a change after the re-read, after drops", events.Event{Seq: 5, Kind: "task", Task: "a", State: "FAILED", Txid: 250}, true, model.EventKindTask, 1, true, 1},
		{"a cluster change", events.Event{Seq: 5, Kind: "cluster", State: "ACTIVE", Txid: 150}, false, "", 0, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rereads := 0
			js := &jobStream{
				pr:     &progress{job: "j", state: "RUNNING", tasks: map[string]string{"a": "QUEUED", "b": "QUEUED"}},
				before: snap("100:100:"),
				reread: func() (*progress, events.Snapshot, error) {
					rereads++
					return &progress{job: "j", state: "RUNNING", tasks: map[string]string{"a": "COMPLETE", "b": "COMPLETE"}}, snap("200:200:"), nil
				},
			}
			m := js.event(c.ev, c.lagged)
			if rereads != c.rereads {
				t.Errorf("%d re-reads, want %d", rereads, c.rereads)
			}
			if c.want == "" {
				if m != nil {
					t.Fatalf("sent %+v, want nothing", m)
				}
				return
			}
			if m == nil {
				t.Fatalf("sent nothing, want %s", c.want)
			}
			if m.Kind != c.want || m.Done != c.done || m.Lagged != c.lag || m.Total != 2 {
				t.Errorf("sent %s done %d of %d lagged %v, want %s done %d of 2 lagged %v", m.Kind, m.Done, m.Total, m.Lagged, c.want, c.done, c.lag)
			}
		})
	}
}

// What clusterEvents sends for one event: as jobProgress, a lag goes out
// even with an event the last read holds.
func TestClusterStreamEvent(t *testing.T) {
	before, err := events.ParseSnapshot("100:100:")
	if err != nil {
		t.Fatal(err)
	}
	after, err := events.ParseSnapshot("200:200:")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		ev        events.Event
		lagged    bool
		want      model.EventKind // "" for nothing
		lag       bool
		rereads   int
		withState bool // the message carries the re-read cluster
	}{
		{"a new change", events.Event{Seq: 5, Kind: "job", State: "RUNNING", Txid: 150}, false, model.EventKindJob, false, 0, false},
		{"a change the last read saw", events.Event{Seq: 5, Kind: "job", State: "RUNNING", Txid: 50}, false, "", false, 0, false},
		{"a change the last read saw, after drops", events.Event{Seq: 5, Kind: "job", State: "RUNNING", Txid: 50}, true, model.EventKindSnapshot, true, 1, true},
		{"a new change, after drops", events.Event{Seq: 5, Kind: "task", State: "COMPLETE", Txid: 150}, true, model.EventKindTask, true, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rereads := 0
			cs := &clusterStream{id: "c1", before: before, reread: func() (*control.Cluster, events.Snapshot, error) {
				rereads++
				return &control.Cluster{Status: "ACTIVE"}, after, nil
			}}
			m := cs.event(c.ev, c.lagged)
			if rereads != c.rereads {
				t.Errorf("%d re-reads, want %d", rereads, c.rereads)
			}
			if c.want == "" {
				if m != nil {
					t.Fatalf("sent %+v, want nothing", m)
				}
				return
			}
			if m == nil {
				t.Fatalf("sent nothing, want %s", c.want)
			}
			if m.Kind != c.want || m.Lagged != c.lag || (m.Cluster != nil) != c.withState {
				t.Errorf("sent %s lagged %v cluster %v, want %s lagged %v cluster %v", m.Kind, m.Lagged, m.Cluster != nil, c.want, c.lag, c.withState)
			}
			if c.rereads > 0 && !cs.before.Saw(events.Event{Txid: 150}) {
				t.Error("the re-read's snapshot is not the one kept")
			}
		})
	}
}
