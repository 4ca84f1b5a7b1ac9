package solver

import (
	"strconv"
	"strings"

	"github.com/cooprhq/coopr/catalog"
	"github.com/google/uuid"
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

// Hostname builds <prefix><idnum>-<nodenum>.<suffix> (docs/catalog.md#host-names).
func Hostname(clusterName, clusterID string, nodenum int, dnsSuffix string) string {
	return newHostnamer(clusterName, clusterID, dnsSuffix).name(nodenum)
}

// hostnamer holds the per-cluster parts of hostnames, computed once.
type hostnamer struct {
	prefix, idnum, suffix string
}

func newHostnamer(clusterName, clusterID, dnsSuffix string) hostnamer {
	var b strings.Builder
	for _, r := range strings.TrimLeft(strings.ToLower(clusterName), "0123456789") {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	idnum := strings.TrimLeft(clusterID, "0")
	if idnum == "" {
		idnum = "0"
	}
	suffix := strings.TrimPrefix(dnsSuffix, ".")
	if suffix == "" {
		suffix = "local"
	}
	return hostnamer{prefix: b.String(), idnum: idnum, suffix: suffix}
}

func (h hostnamer) name(nodenum int) string {
	tail := h.idnum + "-" + strconv.Itoa(nodenum)
	prefix := h.prefix
	if room := 63 - len(tail); len(prefix) > room {
		prefix = prefix[:max(0, room)]
	}
	return prefix + tail + "." + h.suffix
}

// materialize creates count nodes per layout entry, in order, numbered from
// next (docs/solver.md#materialising-nodes).
func materialize(entries []LayoutEntry, cl Cluster, next int, provider string, cat Catalog) []Node {
	total := 0
	for _, e := range entries {
		total += e.Count
	}
	nodes := make([]Node, 0, total)
	h := newHostnamer(cl.Name, cl.ID, cl.DNSSuffix)
	for _, e := range entries {
		proto := newNode(e.NodeLayout, cl, 0, provider, cat)
		for range e.Count {
			n := proto
			n.NodeNum, n.ID, n.Hostname = next, NodeID(cl.ID, next), h.name(next)
			nodes = append(nodes, n)
			next++
		}
	}
	return nodes
}

func newNode(l NodeLayout, cl Cluster, num int, provider string, cat Catalog) Node {
	n := Node{
		ID: NodeID(cl.ID, num), NodeNum: num, Hostname: Hostname(cl.Name, cl.ID, num, cl.DNSSuffix),
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
