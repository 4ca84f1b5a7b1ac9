package solver

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/cooprhq/coopr/catalog"
)

// FirstNodeNum is the nodenum of a cluster's first node (docs/catalog.md#node-numbers).
const FirstNodeNum = 1000

// Cluster identifies the cluster nodes are made for: its id and name feed
// hostnames and node ids.
type Cluster struct {
	ID        string
	Name      string
	DNSSuffix string
}

// Node is a materialised node of a layout.
type Node struct {
	ID           string   `json:"id"`
	NodeNum      int      `json:"nodenum"`
	Hostname     string   `json:"hostname"`
	Services     []string `json:"services"`
	HardwareType string   `json:"hardwaretype"`
	ImageType    string   `json:"imagetype"`
	Flavor       string   `json:"flavor"`
	Image        string   `json:"image"`
	SSHUser      string   `json:"sshuser,omitempty"`
}

// nodeNamespace scopes node ids: the solver must stay deterministic, so ids
// are name-based UUIDs of (cluster id, nodenum), unique because nodenums are
// never reused within a cluster.
var nodeNamespace = uuid.MustParse("6f1c2f0e-5b1e-4c59-9f0a-8f5d0b6c7a10")

// NodeID is the id of node nodenum of cluster clusterID.
func NodeID(clusterID string, nodenum int) string {
	return uuid.NewSHA1(nodeNamespace, []byte(clusterID+"/"+strconv.Itoa(nodenum))).String()
}

// Host names are <prefix>-<idnum>-<nodenum>.<suffix>
// (docs/catalog.md#host-names), with a '-' between the name and the id so
// that "demo2" with id 40 is not read as "demo" with id 240: prefix is HostPrefix of the
// cluster's name, idnum the cluster id without leading zeros, suffix the
// dnsSuffix without its leading dot (default local). The prefix is cut so
// that the first label has at most 63 characters and the whole name at
// most 253.
//
// Clusters made before the separator have <prefix><idnum>-<nodenum> with
// Coopr's prefix; Scale names their new nodes that way too (see
// hostnamerFor), so that a cluster's names follow one scheme.

// Hostname is the host name of node nodenum of a cluster.
func Hostname(clusterName, clusterID string, nodenum int, dnsSuffix string) string {
	return newHostnamer(Cluster{ID: clusterID, Name: clusterName, DNSSuffix: dnsSuffix}, false).name(nodenum)
}

// HostPrefix is the part of host names made from a cluster name:
// lowercased, accents dropped (é → e, ø → o, ß → ss), every other character
// outside [a-z0-9] a '-', runs of those one '-', without leading digits or
// '-' and trailing '-'. It is "" when nothing is left ("☃", "2024"): such a
// name makes no host name (CheckHostnames).
func HostPrefix(name string) string {
	var b strings.Builder
	gap := false
	add := func(r rune) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0:
			if gap && b.Len() > 0 {
				b.WriteByte('-')
			}
			gap = false
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			// A leading digit: dropped, as Coopr did.
		default:
			gap = true
		}
	}
	for _, r := range norm.NFKD.String(name) {
		if unicode.Is(unicode.Mn, r) {
			continue // the accents NFKD split off their letters
		}
		r = unicode.ToLower(r)
		if s, ok := unaccented[r]; ok {
			for _, x := range s {
				add(x)
			}
			continue
		}
		add(r)
	}
	return b.String()
}

// unaccented spells the Latin letters that NFKD leaves whole.
var unaccented = map[rune]string{
	'æ': "ae", 'œ': "oe", 'ø': "o", 'ß': "ss", 'ł': "l", 'đ': "d", 'ð': "d", 'þ': "th", 'ı': "i", 'ħ': "h", 'ŋ': "n",
}

// HostnameError is a cluster whose nodes would get no valid host name;
// Field names the request field to change.
type HostnameError struct {
	Field, Message string
}

func (e *HostnameError) Error() string { return e.Field + ": " + e.Message }

// CheckHostnames tells whether the nodes of cl numbered up to upTo get
// valid host names (RFC 1123: dot-separated labels of 1–63 letters, digits
// and '-', neither starting nor ending with '-', 253 characters at most).
func CheckHostnames(cl Cluster, upTo int) error {
	if HostPrefix(cl.Name) == "" {
		return &HostnameError{Field: "name", Message: fmt.Sprintf("%q makes no host name: node host names are "+
			"<name>-<id>-<nodenum>.<dnsSuffix>, made from the name's letters a-z (accents dropped) and digits after "+
			"the first letter, anything else becoming '-'; give a name with at least one letter a-z", cl.Name)}
	}
	h := Hostname(cl.Name, cl.ID, upTo, cl.DNSSuffix)
	if err := checkHostname(h); err != nil {
		return &HostnameError{Field: "dnsSuffix", Message: fmt.Sprintf("node host names such as %q would be invalid: %v", h, err)}
	}
	return nil
}

// checkHostname applies RFC 1123 to a host name.
func checkHostname(h string) error {
	if len(h) > 253 {
		return fmt.Errorf("%d characters, over 253", len(h))
	}
	for _, l := range strings.Split(h, ".") {
		switch {
		case l == "" || len(l) > 63:
			return fmt.Errorf("label %q must have 1 to 63 characters", l)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("label %q must not start or end with '-'", l)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("label %q may hold only letters, digits and '-'", l)
			}
		}
	}
	return nil
}

// hostnamer holds the per-cluster parts of host names, computed once.
type hostnamer struct {
	prefix, idnum, suffix string
	legacy                bool // no separator, Coopr's prefix
}

func newHostnamer(cl Cluster, legacy bool) hostnamer {
	idnum := strings.TrimLeft(cl.ID, "0")
	if idnum == "" {
		idnum = "0"
	}
	suffix := strings.TrimPrefix(cl.DNSSuffix, ".")
	if suffix == "" {
		suffix = "local"
	}
	h := hostnamer{prefix: HostPrefix(cl.Name), idnum: idnum, suffix: suffix, legacy: legacy}
	if legacy {
		var b strings.Builder
		for _, r := range strings.TrimLeft(strings.ToLower(cl.Name), "0123456789") {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
		h.prefix = b.String()
	}
	return h
}

func (h hostnamer) name(nodenum int) string {
	tail := h.idnum + "-" + strconv.Itoa(nodenum)
	if h.legacy {
		prefix := h.prefix
		if room := 63 - len(tail); len(prefix) > room {
			prefix = prefix[:max(0, room)]
		}
		return prefix + tail + "." + h.suffix
	}
	room := min(63, 253-1-len(h.suffix)) - len(tail) - 1
	prefix := h.prefix
	if len(prefix) > room {
		prefix = strings.TrimRight(prefix[:max(0, room)], "-")
	}
	if prefix == "" {
		return tail + "." + h.suffix
	}
	return prefix + "-" + tail + "." + h.suffix
}

// hostnamerFor names the new nodes of a cluster that has nodes: the way its
// nodes are named, Coopr's when every one has the name Coopr's scheme
// gives it (a cluster made before the separator), else the current one.
func hostnamerFor(cl Cluster, nodes []ExistingNode) hostnamer {
	h := newHostnamer(cl, false)
	if len(nodes) == 0 {
		return h
	}
	old := newHostnamer(cl, true)
	for _, n := range nodes {
		if n.Hostname != old.name(n.NodeNum) || n.Hostname == h.name(n.NodeNum) {
			return h
		}
	}
	return old
}

// materialize creates count nodes per layout entry, in order, numbered from
// next (docs/solver.md#materialising-nodes).
func materialize(entries []LayoutEntry, cl Cluster, next int, provider string, cat Catalog) []Node {
	total := 0
	for _, e := range entries {
		total += e.Count
	}
	nodes := make([]Node, 0, total)
	h := newHostnamer(cl, false)
	for _, e := range entries {
		proto := newNode(e.NodeLayout, cl, h, 0, provider, cat)
		for range e.Count {
			n := proto
			n.NodeNum, n.ID, n.Hostname = next, NodeID(cl.ID, next), h.name(next)
			nodes = append(nodes, n)
			next++
		}
	}
	return nodes
}

func newNode(l NodeLayout, cl Cluster, h hostnamer, num int, provider string, cat Catalog) Node {
	n := Node{
		ID: NodeID(cl.ID, num), NodeNum: num, Hostname: h.name(num),
		Services: l.Services, HardwareType: l.HardwareType, ImageType: l.ImageType,
	}
	if h := cat.HardwareTypes[l.HardwareType]; h != nil {
		n.Flavor = h.Flavor(provider)
	}
	if i := cat.ImageTypes[l.ImageType]; i != nil {
		n.Image = i.Image(provider)
		n.SSHUser = i.SSHUser(provider)
	}
	return n
}

// unionServices is cluster.services: the union of node services.
func unionServices[N any](nodes []N, services func(N) []string) []string {
	lists := make([][]string, len(nodes))
	for i, n := range nodes {
		lists[i] = services(n)
	}
	return catalog.SortedUnion(lists...)
}
