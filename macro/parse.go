// Package macro parses the %...% macros of cluster configs and links
// (docs/macros.md).
package macro

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is a piece of a string: literal text or a macro.
type Segment struct {
	Text  string // literal text, or the macro's source between the % signs
	Macro *Macro // nil for literal text
}

// Macro is one parsed macro: an optional join around an optional map around
// a basic reference.
type Macro struct {
	Name    string // e.g. "host.service.web", "ip.access_v4.self"
	Index   int    // -1 when absent
	Map     string // format for map(...), "" when absent
	HasMap  bool
	Join    string // separator for join(...)
	HasJoin bool
}

// SyntaxError is a malformed macro.
type SyntaxError struct {
	Macro  string
	Reason string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("macro %%%s%%: %s", e.Macro, e.Reason) }

// Parse splits s into literal and macro segments. Text between two single %
// signs that does not look like a macro (a name or join(/map( at its start) is
// kept as literal text, so prose such as "50% of 60%" is not an error; text
// that looks like a macro but is malformed is a *SyntaxError.
func Parse(s string) ([]Segment, error) {
	var segs []Segment
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			lit.WriteString("%%")
			i += 2
			continue
		}
		j := strings.IndexByte(s[i+1:], '%')
		if j < 0 {
			lit.WriteString(s[i:])
			break
		}
		j += i + 1
		inner := s[i+1 : j]
		if !looksLikeMacro(inner) {
			lit.WriteByte('%')
			i++
			continue
		}
		m, err := parseMacro(inner)
		if err != nil {
			return nil, err
		}
		flush()
		segs = append(segs, Segment{Text: inner, Macro: m})
		i = j + 1
	}
	flush()
	return segs, nil
}

// Check reports the first syntax error in s, if any.
func Check(s string) error {
	_, err := Parse(s)
	return err
}

// HasMacro reports whether s holds at least one macro.
func HasMacro(s string) bool {
	segs, err := Parse(s)
	if err != nil {
		return true
	}
	for _, sg := range segs {
		if sg.Macro != nil {
			return true
		}
	}
	return false
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

func looksLikeMacro(inner string) bool {
	if strings.HasPrefix(inner, "join(") || strings.HasPrefix(inner, "map(") {
		return true
	}
	n := 0
	for n < len(inner) && isNameByte(inner[n]) {
		n++
	}
	return n > 0 && (n == len(inner) || inner[n] == '[')
}

func parseMacro(inner string) (*Macro, error) {
	p := &parser{src: inner}
	m := &Macro{Index: -1}
	var err error
	switch {
	case strings.HasPrefix(inner, "join("):
		p.pos = len("join(")
		m.HasJoin = true
		if err = p.inner(m); err == nil {
			if err = p.expect(','); err == nil {
				if m.Join, err = p.lit(); err == nil {
					err = p.expect(')')
				}
			}
		}
	default:
		err = p.inner(m)
	}
	if err == nil && p.pos != len(p.src) {
		err = p.fail("unexpected %q", p.src[p.pos:])
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

type parser struct {
	src string
	pos int
}

func (p *parser) fail(format string, a ...any) error {
	return &SyntaxError{Macro: p.src, Reason: fmt.Sprintf(format, a...)}
}

func (p *parser) expect(c byte) error {
	if p.pos >= len(p.src) || p.src[p.pos] != c {
		return p.fail("expected %q at offset %d", c, p.pos)
	}
	p.pos++
	return nil
}

func (p *parser) inner(m *Macro) error {
	if strings.HasPrefix(p.src[p.pos:], "map(") {
		p.pos += len("map(")
		m.HasMap = true
		if err := p.basic(m); err != nil {
			return err
		}
		if err := p.expect(','); err != nil {
			return err
		}
		f, err := p.lit()
		if err != nil {
			return err
		}
		m.Map = f
		return p.expect(')')
	}
	return p.basic(m)
}

func (p *parser) basic(m *Macro) error {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return p.fail("expected a name at offset %d", start)
	}
	m.Name = p.src[start:p.pos]
	if p.pos < len(p.src) && p.src[p.pos] == '[' {
		p.pos++
		ds := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == ds {
			return p.fail("expected digits after '[' at offset %d", ds)
		}
		n, err := strconv.Atoi(p.src[ds:p.pos])
		if err != nil {
			return p.fail("index %s is too large", p.src[ds:p.pos])
		}
		m.Index = n
		return p.expect(']')
	}
	return nil
}

func (p *parser) lit() (string, error) {
	if p.pos >= len(p.src) || (p.src[p.pos] != '\'' && p.src[p.pos] != '"') {
		return "", p.fail("expected a quoted literal at offset %d", p.pos)
	}
	q := p.src[p.pos]
	end := strings.IndexByte(p.src[p.pos+1:], q)
	if end < 0 {
		return "", p.fail("unterminated literal at offset %d", p.pos)
	}
	v := p.src[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	return v, nil
}
