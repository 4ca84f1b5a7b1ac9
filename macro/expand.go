package macro

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// DefaultIPType is the address type of the ip forms that name none.
const DefaultIPType = "bind_v4"

// Node is what macros read of a node.
type Node struct {
	ID       string
	NodeNum  int
	Hostname string
	IPs      map[string]string // address type -> address
	Services []string
}

// Env is a cluster as macros see it, from one node's point of view.
type Env struct {
	owner   string
	self    *Node
	service map[string][]*Node // service -> its nodes by nodenum
	byID    map[string]*Node
}

// NewEnv indexes nodes for expansion. self names the node the task runs
// on; "" expands at cluster scope, where every self form stays unexpanded.
func NewEnv(nodes []Node, self, owner string) *Env {
	env := &Env{owner: owner, service: map[string][]*Node{}, byID: make(map[string]*Node, len(nodes))}
	ns := make([]*Node, len(nodes))
	for i := range nodes {
		ns[i] = &nodes[i]
	}
	less := func(i, j int) bool { return ns[i].NodeNum < ns[j].NodeNum }
	if !sort.SliceIsSorted(ns, less) { // callers that keep nodes in order skip the sort
		sort.SliceStable(ns, less)
	}
	for _, n := range ns {
		env.byID[n.ID] = n
		for _, s := range n.Services {
			env.service[s] = append(env.service[s], n)
		}
	}
	if self != "" {
		env.self = env.byID[self]
	}
	return env
}

// At is env from the point of view of node self ("" for cluster scope),
// sharing env's index: a cluster indexed once expands for each of its
// nodes at a cost that does not grow with the cluster. env is unchanged.
func (env *Env) At(self string) *Env {
	e := *env
	e.self = nil
	if self != "" {
		e.self = env.byID[self]
	}
	return &e
}

// Error is a macro that cannot be expanded; the task it belongs to fails
// without retry (docs/macros.md#errors).
type Error struct {
	Path   string // where in the config, e.g. "hadoop.core_site[0]"; "" for a bare string
	Macro  string // the macro's source between the % signs
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("macro %%%s%%: %s", e.Macro, e.Reason)
	}
	return fmt.Sprintf("%s: macro %%%s%%: %s", e.Path, e.Macro, e.Reason)
}

// Expand expands the macros of s. A string in which no macro expands is
// returned exactly as written; once one does, those that do not become "".
func (env *Env) Expand(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	segs, err := Parse(s)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			return "", &Error{Macro: se.Macro, Reason: se.Reason}
		}
		return "", err
	}
	var b strings.Builder
	expanded := false
	for _, sg := range segs {
		if sg.Macro == nil {
			b.WriteString(sg.Text)
			continue
		}
		v, ok, err := env.value(sg.Macro)
		if err != nil {
			return "", &Error{Macro: sg.Text, Reason: err.Error()}
		}
		if ok {
			expanded = true
			b.WriteString(v)
		}
	}
	if !expanded {
		return s, nil
	}
	return b.String(), nil
}

// ExpandJSON expands every string leaf of v, a value decoded by
// encoding/json, through objects and arrays; keys are never expanded. It
// returns a new value and leaves v unchanged.
func (env *Env) ExpandJSON(v any) (any, error) { return env.walk("", v) }

func (env *Env) walk(path string, v any) (any, error) {
	switch v := v.(type) {
	case string:
		s, err := env.Expand(v)
		if e, ok := err.(*Error); ok {
			e.Path = path
		}
		return s, err
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			y, err := env.walk(p, x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := env.walk(path+"["+strconv.Itoa(i)+"]", x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	default:
		return v, nil
	}
}

// errAbsent marks a list form of a service that no node has.
var errAbsent = errors.New("service on no node")

// value expands one macro; ok is false when it stays unexpanded.
func (env *Env) value(m *Macro) (string, bool, error) {
	vals, ok, err := env.resolve(m.Name)
	if errors.Is(err, errAbsent) {
		// A list of a service on no node stays unexpanded; an entry of it
		// does not exist.
		if m.Index >= 0 {
			return "", false, fmt.Errorf("index %d out of range: no node has the service", m.Index)
		}
		return "", false, nil
	}
	if err != nil || !ok {
		return "", false, err
	}
	if m.Index >= 0 {
		if m.Index >= len(vals) {
			return "", false, fmt.Errorf("index %d out of range: %d value(s)", m.Index, len(vals))
		}
		vals = vals[m.Index : m.Index+1]
	}
	if m.HasMap {
		mapped := make([]string, len(vals))
		for i, v := range vals {
			mapped[i] = format(m.Map, v)
		}
		vals = mapped
	}
	sep := ","
	if m.HasJoin {
		sep = m.Join
	}
	return strings.Join(vals, sep), true, nil
}

// format puts v where fmt has $; $$ is a literal $.
func format(f, v string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '$' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 < len(f) && f[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		b.WriteString(v)
	}
	return b.String()
}

// resolve gives the values a macro name stands for. An index applied to a
// single value (a self form, a count) works as on a one-value list.
func (env *Env) resolve(name string) ([]string, bool, error) {
	switch {
	case name == "cluster.owner":
		return []string{env.owner}, true, nil
	case name == "host.self":
		if env.self == nil || env.self.Hostname == "" {
			return nil, false, nil
		}
		return []string{env.self.Hostname}, true, nil
	case strings.HasPrefix(name, "host.service."):
		nodes, ok := env.service[strings.TrimPrefix(name, "host.service.")]
		if !ok {
			return nil, false, errAbsent
		}
		out := make([]string, len(nodes))
		for i, n := range nodes {
			if n.Hostname == "" {
				return nil, false, fmt.Errorf("node %s has no hostname yet", n.ID)
			}
			out[i] = n.Hostname
		}
		return out, true, nil
	case strings.HasPrefix(name, "num.service."):
		return []string{strconv.Itoa(len(env.service[strings.TrimPrefix(name, "num.service.")]))}, true, nil
	case strings.HasPrefix(name, "instance.self.service."):
		svc := strings.TrimPrefix(name, "instance.self.service.")
		if env.self == nil {
			return nil, false, nil
		}
		// The list is in nodenum order: a search, not a scan, finds self.
		list := env.service[svc]
		i := sort.Search(len(list), func(i int) bool { return list[i].NodeNum >= env.self.NodeNum })
		if i == len(list) || list[i] != env.self {
			i = slices.Index(list, env.self) // nodenums that repeat
		}
		if i < 0 {
			return nil, false, nil
		}
		return []string{strconv.Itoa(i + 1)}, true, nil
	case strings.HasPrefix(name, "ip."):
		return env.ip(strings.TrimPrefix(name, "ip."))
	}
	return nil, false, nil // not a macro coopr knows: left as written
}

// ip resolves "self", "T.self", "service.S" and "T.service.S".
func (env *Env) ip(rest string) ([]string, bool, error) {
	typ := DefaultIPType
	if rest != "self" && !strings.HasPrefix(rest, "service.") {
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			return nil, false, nil
		}
		typ, rest = rest[:dot], rest[dot+1:]
	}
	if rest == "self" {
		if env.self == nil {
			return nil, false, nil
		}
		a := env.self.IPs[typ]
		if a == "" {
			return nil, false, fmt.Errorf("this node (%s) has no %s address", env.self.ID, typ)
		}
		return []string{a}, true, nil
	}
	svc, ok := strings.CutPrefix(rest, "service.")
	if !ok {
		return nil, false, nil
	}
	nodes, ok := env.service[svc]
	if !ok {
		return nil, false, errAbsent
	}
	out := make([]string, len(nodes))
	for i, n := range nodes {
		a := n.IPs[typ]
		if a == "" {
			return nil, false, fmt.Errorf("node %s has no %s address", n.ID, typ)
		}
		out[i] = a
	}
	return out, true, nil
}

// ServiceOf names the service a macro name refers to, "" when none.
func ServiceOf(name string) string {
	for _, p := range []string{"host.service.", "num.service.", "instance.self.service."} {
		if s, ok := strings.CutPrefix(name, p); ok {
			return s
		}
	}
	if rest, ok := strings.CutPrefix(name, "ip."); ok {
		if s, ok := strings.CutPrefix(rest, "service."); ok {
			return s
		}
		if _, s, ok := strings.Cut(rest, ".service."); ok {
			return s
		}
	}
	return ""
}

// NeedsPeers reports whether expanding v (a decoded JSON value, such as a
// cluster config) for a node may read other nodes' host names or
// addresses: it holds a macro that names a service (%ip.service.web%,
// %num.service.web%, ...) or one this package does not know, or text that
// does not parse. Macros of the node itself (%host.self%, %ip.self%,
// %ip.T.self%) and %cluster.owner% do not.
func NeedsPeers(v any) bool {
	switch v := v.(type) {
	case string:
		segs, err := Parse(v)
		if err != nil {
			return true
		}
		for _, sg := range segs {
			if sg.Macro != nil && !ownMacro(sg.Macro.Name) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if NeedsPeers(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if NeedsPeers(x) {
				return true
			}
		}
	}
	return false
}

// ownMacro reports whether a macro name reads only the node's own record
// or the cluster's owner.
func ownMacro(name string) bool {
	switch name {
	case "host.self", "ip.self", "cluster.owner":
		return true
	}
	typ, ok := strings.CutPrefix(name, "ip.")
	typ, self := strings.CutSuffix(typ, ".self")
	return ok && self && typ != "" && typ != "service" && !strings.Contains(typ, ".")
}
