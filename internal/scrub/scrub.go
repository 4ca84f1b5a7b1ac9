// Package scrub hides sensitive values in the text that comes back from a
// task: its output lines, its result's message and output tails
// (docs/security.md#scrubbing-task-output). The agent scrubs what it sends
// and the server scrubs again what it receives, with the same rules.
package scrub

import (
	"sort"
	"strings"
)

// Mask replaces a sensitive value, or the part of one, in text.
const Mask = "[redacted]"

const (
	// minValue is the shortest value hidden: shorter ones ("22", "true")
	// are ordinary words, and hiding them would blank out ordinary text.
	minValue = 4
	// minLine is the shortest line of a multi-line value (a key) hidden
	// on its own.
	minLine = 8
	// maxFragment bounds the shortest piece of a value that counts as one
	// at a cut: a piece of at least min(maxFragment, half the value).
	maxFragment = 4
)

// Set is the sensitive values of one task, longest first, so that a value
// containing another is hidden whole.
type Set struct {
	values []string
	// pieces are the values that can be cut at the edge of a text: those
	// of one line (a multi-line value is matched by its lines), without a
	// PEM armor line, which is no secret and would match ordinary dashes.
	pieces []string
	// longest is the length of the longest of pieces.
	longest int
}

// New collects the strings in vs, walking maps and lists: every one of at
// least 4 bytes, and every line (trimmed) of at least 8 bytes of one that
// spans lines.
func New(vs ...any) *Set {
	s := &Set{}
	seen := map[string]bool{}
	add := func(v string, min int) {
		if len(v) < min || seen[v] {
			return
		}
		seen[v] = true
		s.values = append(s.values, v)
		if !strings.Contains(v, "\n") && !strings.HasPrefix(v, "-----BEGIN ") && !strings.HasPrefix(v, "-----END ") {
			s.pieces = append(s.pieces, v)
			s.longest = max(s.longest, len(v))
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			add(v, minValue)
			if strings.Contains(v, "\n") {
				for _, line := range strings.Split(v, "\n") {
					add(strings.TrimSpace(line), minLine)
				}
			}
		case []string:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case map[string]map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, v := range vs {
		walk(v)
	}
	byLength := func(vs []string) {
		sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) || len(vs[i]) == len(vs[j]) && vs[i] < vs[j] })
	}
	byLength(s.values)
	byLength(s.pieces)
	return s
}

// Empty reports whether the set hides nothing.
func (s *Set) Empty() bool { return s == nil || len(s.values) == 0 }

// Add returns a set of s's values and those of vs.
func (s *Set) Add(vs ...any) *Set {
	if s == nil {
		return New(vs...)
	}
	all := make([]any, 0, len(s.values)+len(vs))
	for _, v := range s.values {
		all = append(all, v)
	}
	return New(append(all, vs...)...)
}

// String hides every whole value in text.
func (s *Set) String(text string) string {
	if s.Empty() {
		return text
	}
	return mask(text, s.find(text, 0, nil))
}

// Text hides the values in text that may have been cut out of a longer
// one (an output's tail, a message cut short): whole values, and the end
// of a value at its start and the beginning of one at its end.
func (s *Set) Text(text string) string {
	if s.Empty() {
		return text
	}
	spans := s.find(text, 0, nil)
	if n := s.cutEnd(text); n > 0 {
		spans = append(spans, span{0, n})
	}
	if n := s.cutStart(text); n > 0 {
		spans = append(spans, span{len(text) - n, len(text)})
	}
	return mask(text, spans)
}

// fragment is the shortest piece of v that counts as part of it at a cut.
func fragment(v string) int { return min(maxFragment, (len(v)+1)/2) }

// cutEnd is the length of the longest start of text that is the end of a
// value (not the whole of it), 0 for none.
func (s *Set) cutEnd(text string) int {
	best := 0
	for _, v := range s.pieces {
		for n := min(len(v)-1, len(text)); n >= fragment(v) && n > best; n-- {
			if strings.HasPrefix(text, v[len(v)-n:]) {
				best = n
				break
			}
		}
	}
	return best
}

// cutStart is the length of the longest end of text that is the
// beginning of a value (not the whole of it), 0 for none.
func (s *Set) cutStart(text string) int {
	best := 0
	for _, v := range s.pieces {
		for n := min(len(v)-1, len(text)); n >= fragment(v) && n > best; n-- {
			if strings.HasSuffix(text, v[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

type span struct{ from, to int }

// find appends the spans of text where values occur that end after from.
func (s *Set) find(text string, from int, spans []span) []span {
	for _, v := range s.values {
		for i := 0; i+len(v) <= len(text); {
			j := strings.Index(text[i:], v)
			if j < 0 {
				break
			}
			start := i + j
			if start+len(v) > from {
				spans = append(spans, span{max(start, from), start + len(v)})
			}
			i = start + 1
		}
	}
	return spans
}

// mask replaces the spans of text, merged, with Mask.
func mask(text string, spans []span) string {
	if len(spans) == 0 {
		return text
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var b strings.Builder
	at := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from <= to; i++ {
			to = max(to, spans[i].to)
		}
		if from < at {
			from = at
		}
		b.WriteString(text[at:from])
		b.WriteString(Mask)
		at = to
	}
	b.WriteString(text[at:])
	return b.String()
}

// Carry is what a stream's scrubbing keeps between its chunks.
type Carry struct {
	// seen is the end of what was passed on (up to the longest value less
	// a byte): a value that began there and ends in the next chunk is
	// hidden there.
	seen string
	// held is the end of the last chunk that may be the beginning of a
	// value: passed on with the next chunk, once it shows whether it was.
	held string
}

// Stream scrubs chunk, the next piece of a stream whose scrubbing so far
// left c, and returns what may be passed on. A value split between chunks
// is hidden: the end of a chunk that could be the beginning of a value
// (at least min(4, half of it) bytes) is held back until the next one
// shows; a shorter beginning is passed on, and the rest of the value is
// hidden in the next chunk. Held bytes the stream never continues are
// dropped: they are most likely a value's beginning.
func (s *Set) Stream(c *Carry, chunk string) string {
	if s.Empty() {
		return chunk
	}
	text := c.held + chunk
	full := c.seen + text
	spans := s.find(full, len(c.seen), nil)
	hold := 0
	// A value's beginning may have started in what was passed on already
	// (too short then to tell): what of it is in this chunk is held.
	if n := min(s.cutStart(full), len(text)); n > 0 {
		hold = n
		for _, sp := range spans {
			// Held bytes already hidden stay hidden: hold only what follows.
			hold = min(hold, len(full)-sp.to)
		}
	}
	out := maskFrom(full[:len(full)-hold], spans, len(c.seen))
	c.held = text[len(text)-hold:]
	seen := c.seen + out
	if keep := s.longest - 1; len(seen) > keep {
		seen = seen[len(seen)-max(keep, 0):]
	}
	c.seen = seen
	return out
}

// maskFrom is mask of text[from:], for spans that begin at from or later.
func maskFrom(text string, spans []span, from int) string {
	shifted := make([]span, len(spans))
	for i, sp := range spans {
		shifted[i] = span{sp.from - from, sp.to - from}
	}
	return mask(text[from:], shifted)
}
