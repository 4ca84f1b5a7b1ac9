package events

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// The relay's encoding of events is json.Marshal's, byte for byte, for
// every field, present or omitted, and strings that need escapes.
func TestAppendEventsAsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 24, 15, 4, 5, 123456789, time.FixedZone("x", 3600))
	strs := []string{"", "plain", `quo"te`, `back\slash`, "ctl\x00\x01\x1f\x7f", "nl\n cr\r tab\t bs\b ff\f",
		"<html> & </html>", "é ü 日本 😀", "bad \xff utf8 \xc3", "line\u2028sep\u2029", "\xe2\x80"}
	var evs []Event
	for i, s := range strs {
		evs = append(evs, Event{Seq: int64(i) * 1e12, Tenant: s, Kind: "task", State: s, Message: s, At: at})
	}
	evs = append(evs,
		Event{},
		Event{Seq: -1, Tenant: "t", Cluster: "c", Job: "j", Task: "k", Kind: "job", State: "RUNNING", Attempt: 3,
			Message: "m", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Txid: 1<<64 - 1},
		Event{Attempt: -2, At: at.In(time.UTC)},
	)
	want, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	if got, n := appendEvents(nil, evs, math.MaxInt); string(got) != string(want) || n != len(evs) {
		t.Fatalf("appendEvents took %d of %d:\n%s\njson.Marshal:\n%s", n, len(evs), got, want)
	}
	if got, n := appendEvents(nil, nil, math.MaxInt); string(got) != "[]" || n != 0 {
		t.Fatalf("no events: %s, %d", got, n)
	}
}
