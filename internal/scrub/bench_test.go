package scrub

import (
	"strings"
	"testing"
)

// The cost of scrubbing one output line of 100 bytes against a cluster's
// values (a key of several lines, a provider token and password):
// go test -run '^$' -bench . ./internal/scrub/
func BenchmarkStream(b *testing.B) {
	s := testSet()
	line := strings.Repeat("TASK [web : install packages] ok: [node-1] ", 3)[:100]
	var c Carry
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		s.Stream(&c, line)
	}
}

func BenchmarkText(b *testing.B) {
	s := testSet()
	tail := strings.Repeat("TASK [web : install packages] ok: [node-1]\n", 48) // a 2 KiB tail
	b.SetBytes(int64(len(tail)))
	b.ReportAllocs()
	for b.Loop() {
		s.Text(tail)
	}
}
