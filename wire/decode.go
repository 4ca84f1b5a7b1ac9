package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The agent decodes every payload it claims, and encoding/json spent more
// CPU on that than anything else in the agent (about 15 µs and 100
// allocations for a 1 KB payload; docs/performance.md). decodeTask reads
// the shape the server writes by hand. Anything it was not written for (a
// key it does not know, spelt in other case or given twice, a value of
// another type, bad syntax) makes it give up, and Decode then leaves the
// payload to encoding/json: what it accepts it decodes as json.Unmarshal
// would (TestDecodeAsUnmarshal, FuzzDecode).

type decoder struct {
	b []byte
	i int
	// depth counts the objects and arrays open in a free-form value:
	// encoding/json refuses nesting past maxDepth, and recursing without
	// a bound would let a deep enough payload exhaust the stack.
	depth int
}

// maxDepth is encoding/json's own limit on nesting.
const maxDepth = 10000

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next is the next byte after whitespace, 0 at the end.
func (d *decoder) next() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) eat(c byte) bool {
	if d.next() == c {
		d.i++
		return true
	}
	return false
}

// null takes a null. Every field the server writes null is one whose zero
// value json.Unmarshal leaves it at, in a fresh Task with no key twice.
func (d *decoder) null() bool {
	if d.next() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// str reads a string. One with escapes goes to encoding/json, which knows
// them all; invalid UTF-8 too (it is replaced there).
func (d *decoder) str() (string, bool) {
	if d.next() != '"' {
		return "", false
	}
	start := d.i
	d.i++
	escaped, high := false, false
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !escaped && (!high || utf8.Valid(d.b[start+1:d.i-1])) {
				return string(d.b[start+1 : d.i-1]), true
			}
			var s string
			if json.Unmarshal(d.b[start:d.i], &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			high = true
			d.i++
		default:
			d.i++
		}
	}
	return "", false
}

// member moves to an object's next key and past its colon: more is false
// at the object's end. A struct's keys are the server's own: one with an
// escape or a byte past ASCII makes the decoder give up (ok false).
func (d *decoder) member(first bool) (key []byte, more, ok bool) {
	if d.eat('}') {
		return nil, false, true
	}
	if !first && !d.eat(',') {
		return nil, false, false
	}
	if d.next() != '"' {
		return nil, false, false
	}
	d.i++
	start := d.i
	for d.i < len(d.b) && d.b[d.i] != '"' {
		if c := d.b[d.i]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return nil, false, false
		}
		d.i++
	}
	if d.i == len(d.b) {
		return nil, false, false
	}
	key = d.b[start:d.i]
	d.i++
	return key, true, d.eat(':')
}

// mapMember is member for a map's keys, which may be anything.
func (d *decoder) mapMember(first bool) (key string, more, ok bool) {
	if d.eat('}') {
		return "", false, true
	}
	if !first && !d.eat(',') {
		return "", false, false
	}
	key, ok = d.str()
	return key, ok, ok && d.eat(':')
}

// element moves to an array's next element: more is false at its end.
func (d *decoder) element(first bool) (more, ok bool) {
	if d.eat(']') {
		return false, true
	}
	return true, first || d.eat(',')
}

// once marks field bit in seen, false when it was there: json.Unmarshal
// merges a key given twice into the first, which the hand decoder leaves
// to it.
func once(seen *uint32, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

// number reads a number's text as JSON's grammar allows it, and whether
// it is an integer (no fraction or exponent).
func (d *decoder) number() (string, bool, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	first := d.i
	n := d.digits()
	if n == 0 || (n > 1 && d.b[first] == '0') {
		return "", false, false
	}
	integer := true
	if d.i < len(d.b) && d.b[d.i] == '.' {
		integer = false
		d.i++
		if d.digits() == 0 {
			return "", false, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return "", false, false
		}
	}
	return string(d.b[start:d.i]), integer, true
}

func (d *decoder) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

func (d *decoder) int(dst *int) bool {
	if d.null() {
		return true
	}
	s, integer, ok := d.number()
	if !ok || !integer {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 0)
	*dst = int(n)
	return err == nil
}

func (d *decoder) string(dst *string) bool {
	if d.null() {
		return true
	}
	s, ok := d.str()
	*dst = s
	return ok
}

func (d *decoder) bool() (bool, bool) {
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

// value reads any value as json.Unmarshal does into an interface.
func (d *decoder) value() (any, bool) {
	switch d.next() {
	case '{', '[':
		if d.depth++; d.depth > maxDepth {
			return nil, false
		}
		defer func() { d.depth-- }()
	}
	switch d.next() {
	case '{':
		m := map[string]any{}
		return m, d.members(m)
	case '[':
		d.i++
		s := []any{}
		for first := true; ; first = false {
			more, ok := d.element(first)
			if !ok {
				return nil, false
			}
			if !more {
				return s, true
			}
			v, ok := d.value()
			if !ok {
				return nil, false
			}
			s = append(s, v)
		}
	case '"':
		return d.str()
	case 'n':
		return nil, d.null()
	case 't', 'f':
		return d.bool()
	default:
		s, _, ok := d.number()
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
}

// members reads an object into m.
func (d *decoder) members(m map[string]any) bool {
	if !d.eat('{') {
		return false
	}
	for first := true; ; first = false {
		k, more, ok := d.mapMember(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		v, ok := d.value()
		if !ok {
			return false
		}
		m[k] = v
	}
}

func (d *decoder) anyMap(dst *map[string]any) bool {
	if d.null() {
		return true
	}
	*dst = map[string]any{}
	return d.members(*dst)
}

// readMap reads an object into a new map, each value by read into a zero
// V (as encoding/json gives each member a fresh element); null leaves dst
// as it is.
func readMap[V any](d *decoder, dst *map[string]V, read func(*V) bool) bool {
	if d.null() {
		return true
	}
	if !d.eat('{') {
		return false
	}
	m := map[string]V{}
	*dst = m
	for first := true; ; first = false {
		k, more, ok := d.mapMember(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		var v V
		if !read(&v) {
			return false
		}
		m[k] = v
	}
}

func (d *decoder) stringMap(dst *map[string]string) bool {
	return readMap(d, dst, func(v *string) (ok bool) {
		*v, ok = d.str()
		return ok
	})
}

func (d *decoder) strings(dst *[]string) bool {
	if d.null() {
		return true
	}
	if !d.eat('[') {
		return false
	}
	s := []string{}
	for first := true; ; first = false {
		more, ok := d.element(first)
		if !ok {
			return false
		}
		if !more {
			*dst = s
			return true
		}
		v, ok := d.str()
		if !ok {
			return false
		}
		s = append(s, v)
	}
}

func decodeTask(payload []byte) (*Task, bool) {
	d := &decoder{b: payload}
	t := &Task{}
	if !d.task(t) {
		return nil, false
	}
	d.ws()
	return t, d.i == len(d.b)
}

// fields reads an object's members, handing each key to field to read
// its value: a key field does not know, or one given twice (once), ends
// the hand decoding.
func (d *decoder) fields(field func(key []byte, seen *uint32) bool) bool {
	if !d.eat('{') {
		return false
	}
	var seen uint32
	for first := true; ; first = false {
		k, more, ok := d.member(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		if !field(k, &seen) {
			return false
		}
	}
}

func (d *decoder) task(t *Task) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "taskId":
			ok = once(seen, 0) && d.string(&t.TaskID)
		case "jobId":
			ok = once(seen, 1) && d.string(&t.JobID)
		case "clusterId":
			ok = once(seen, 2) && d.string(&t.ClusterID)
		case "tenantId":
			ok = once(seen, 3) && d.string(&t.TenantID)
		case "attempt":
			ok = once(seen, 4) && d.int(&t.Attempt)
		case "taskName":
			ok = once(seen, 5) && d.string(&t.TaskName)
		case "service":
			ok = once(seen, 6)
			if ok && !d.null() {
				t.Service = &Service{}
				ok = d.service(t.Service)
			}
		case "node":
			ok = once(seen, 7)
			if ok && !d.null() {
				t.Node = &Node{}
				ok = d.node(t.Node)
			}
		case "nodes":
			ok = once(seen, 8) && d.nodes(&t.Nodes)
		case "cluster":
			ok = once(seen, 9) && d.cluster(&t.Cluster)
		case "provider":
			ok = once(seen, 10) && d.provider(&t.Provider)
		case "secrets":
			ok = once(seen, 11) && d.secrets(&t.Secrets)
		case "timeoutSeconds":
			ok = once(seen, 12) && d.int(&t.TimeoutSeconds)
		case "authorizedKeys":
			ok = once(seen, 13) && d.strings(&t.AuthorizedKeys)
		case "units":
			ok = once(seen, 14) && d.units(&t.Units)
		case "resources":
			ok = once(seen, 15) && d.resources(&t.Resources)
		case "localResources":
			ok = once(seen, 16) && d.stringMap(&t.LocalResources)
		}
		return ok
	})
}

func (d *decoder) nodes(dst *map[string]Node) bool {
	return readMap(d, dst, d.node)
}

func (d *decoder) secrets(dst *map[string]map[string]any) bool {
	return readMap(d, dst, d.anyMap)
}

func (d *decoder) units(dst *map[string][]string) bool {
	return readMap(d, dst, d.strings)
}

func (d *decoder) resources(dst *[]Resource) bool {
	if d.null() {
		return true
	}
	if !d.eat('[') {
		return false
	}
	s := []Resource{}
	for first := true; ; first = false {
		more, ok := d.element(first)
		if !ok {
			return false
		}
		if !more {
			*dst = s
			return true
		}
		var r Resource
		if !d.resource(&r) {
			return false
		}
		s = append(s, r)
	}
}

func (d *decoder) service(s *Service) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "name":
			ok = once(seen, 0) && d.string(&s.Name)
		case "action":
			ok = once(seen, 1) && d.action(&s.Action)
		}
		return ok
	})
}

func (d *decoder) action(a *Action) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "type":
			ok = once(seen, 0) && d.string(&a.Type)
		case "fields":
			ok = once(seen, 1) && d.stringMap(&a.Fields)
		case "maxAttempts":
			ok = once(seen, 2) && d.int(&a.MaxAttempts)
		case "timeout":
			// Kept as written, as json.RawMessage is (null too).
			ok = once(seen, 3)
			if ok {
				d.ws()
				start := d.i
				_, ok = d.value()
				a.Timeout = append(json.RawMessage(nil), d.b[start:d.i]...)
			}
		}
		return ok
	})
}

func (d *decoder) node(n *Node) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "id":
			ok = once(seen, 0) && d.string(&n.ID)
		case "nodenum":
			ok = once(seen, 1) && d.int(&n.NodeNum)
		case "hostname":
			ok = once(seen, 2) && d.string(&n.Hostname)
		case "ipaddresses":
			ok = once(seen, 3) && d.stringMap(&n.IPAddresses)
		case "sshuser":
			ok = once(seen, 4) && d.string(&n.SSHUser)
		case "hardwaretype":
			ok = once(seen, 5) && d.string(&n.HardwareType)
		case "imagetype":
			ok = once(seen, 6) && d.string(&n.ImageType)
		case "flavor":
			ok = once(seen, 7) && d.string(&n.Flavor)
		case "image":
			ok = once(seen, 8) && d.string(&n.Image)
		case "services":
			ok = once(seen, 9) && d.strings(&n.Services)
		case "automators":
			ok = once(seen, 10) && d.strings(&n.Automators)
		case "facts":
			ok = once(seen, 11) && d.anyMap(&n.Facts)
		}
		return ok
	})
}

func (d *decoder) cluster(c *Cluster) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "id":
			ok = once(seen, 0) && d.string(&c.ID)
		case "name":
			ok = once(seen, 1) && d.string(&c.Name)
		case "owner":
			ok = once(seen, 2) && d.string(&c.Owner)
		case "config":
			ok = once(seen, 3) && d.anyMap(&c.Config)
		}
		return ok
	})
}

func (d *decoder) provider(p *Provider) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "name":
			ok = once(seen, 0) && d.string(&p.Name)
		case "providertype":
			ok = once(seen, 1) && d.string(&p.ProviderType)
		case "provisioner":
			ok = once(seen, 2) && d.anyMap(&p.Provisioner)
		case "network":
			ok = once(seen, 3) && d.anyMap(&p.Network)
		}
		return ok
	})
}

func (d *decoder) resource(r *Resource) bool {
	return d.fields(func(k []byte, seen *uint32) (ok bool) {
		switch string(k) {
		case "pluginType":
			ok = once(seen, 0) && d.string(&r.PluginType)
		case "plugin":
			ok = once(seen, 1) && d.string(&r.Plugin)
		case "resourceType":
			ok = once(seen, 2) && d.string(&r.ResourceType)
		case "name":
			ok = once(seen, 3) && d.string(&r.Name)
		case "version":
			ok = once(seen, 4) && d.int(&r.Version)
		case "format":
			ok = once(seen, 5) && d.string(&r.Format)
		case "permissions":
			ok = once(seen, 6) && d.string(&r.Permissions)
		case "digest":
			ok = once(seen, 7) && d.string(&r.Digest)
		}
		return ok
	})
}
