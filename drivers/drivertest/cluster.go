package drivertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Cluster is a cluster whose nodes are real sshd hosts (sshdtest) sharing
// one per-cluster key, handed to drivers as the server would: node i is
// served by Hosts[i], reached through facts.vm.sshHost/sshPort/sshUser.
type Cluster struct {
	ID     string
	Key    *sshdtest.Key
	Hosts  []*sshdtest.Host
	Nodes  []drivers.Node
	Config map[string]any
}

// NewCluster starts n hosts with o (o.Key is replaced by the cluster key).
// Node i has id node-<i+1>, hostname n<i+1>-<cluster>.coopr.test and
// access_v4 10.231.0.<i+1>: an address that only ever appears in files
// such as /etc/hosts, since SSH goes to facts.vm.sshHost. With o.NonRoot
// the nodes' sshuser is the host's non-root user.
func NewCluster(t testing.TB, n int, o sshdtest.Options) *Cluster {
	t.Helper()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	c := &Cluster{
		ID:     "c" + hex.EncodeToString(rnd[:]),
		Key:    sshdtest.NewKey(t),
		Config: map[string]any{"web": map[string]any{"port": 8080.0, "greeting": "it's \"quoted\""}},
	}
	o.Key = c.Key
	for i := range n {
		h := sshdtest.Start(t, o)
		user := h.User
		if user == "" {
			user = "root"
		}
		c.Hosts = append(c.Hosts, h)
		c.Nodes = append(c.Nodes, drivers.Node{
			ID:          fmt.Sprintf("node-%d", i+1),
			NodeNum:     1000 + i + 1,
			Hostname:    fmt.Sprintf("n%d-%s.coopr.test", i+1, c.ID),
			IPAddresses: map[string]string{"access_v4": fmt.Sprintf("10.231.0.%d", i+1)},
			SSHUser:     user,
			Services:    []string{"base"},
			Facts: map[string]any{"vm": map[string]any{
				"sshHost": h.IP,
				"sshPort": float64(h.Port), // as JSON decodes it
				"sshUser": user,
			}},
		})
	}
	return c
}

// Task is a fresh payload of taskName for node i, or a cluster-scoped one
// (no node) when i < 0. Every node's facts are deep copies: a test may
// change a task's facts without touching the cluster's.
func (c *Cluster) Task(taskName string, i int) *drivers.Task {
	t := &drivers.Task{
		TaskID:    fmt.Sprintf("t-%s-%s-%d-%s", c.ID, taskName, i, randHex()),
		JobID:     "j-" + c.ID,
		ClusterID: c.ID,
		TenantID:  "superadmin",
		Attempt:   1,
		TaskName:  taskName,
		Nodes:     map[string]drivers.Node{},
		Secrets: map[string]map[string]any{"ssh": {
			"privateKey": string(c.Key.PEM),
			"publicKey":  c.Key.AuthorizedKey,
		}},
		TimeoutSeconds: 600,
	}
	t.Cluster.ID, t.Cluster.Name, t.Cluster.Owner = c.ID, "test-"+c.ID, "admin"
	t.Cluster.Config = deepCopy(c.Config)
	for _, n := range c.Nodes {
		t.Nodes[n.ID] = copyNode(n)
	}
	if i >= 0 {
		n := copyNode(c.Nodes[i])
		t.Node = &n
	}
	return t
}

// Merge does what the server does with a result of node i: facts merge
// under the producer's namespace on success and failure.
func (c *Cluster) Merge(i int, ns string, r drivers.Result) {
	n := &c.Nodes[i]
	m, _ := n.Facts[ns].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, deepCopy(r.Facts))
	n.Facts[ns] = m
}

func copyNode(n drivers.Node) drivers.Node {
	n.IPAddresses = maps.Clone(n.IPAddresses)
	n.Services = append([]string(nil), n.Services...)
	n.Automators = append([]string(nil), n.Automators...)
	n.Facts = deepCopy(n.Facts)
	return n
}

// deepCopy copies through JSON, which is also how payloads travel: values
// come out as JSON decodes them ([]any, float64).
func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("drivertest: facts are not JSON: %v", err))
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func randHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
