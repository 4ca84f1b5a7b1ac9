package planner

import (
	"fmt"
	"slices"
	"strings"
)

// FindingKind names what a check found wrong with a node
// (docs/operations.md#checking-a-cluster).
type FindingKind string

// The findings.
const (
	// Unreachable: the node did not answer SSH, or has no address.
	FindingUnreachable FindingKind = "UNREACHABLE"
	// HostKeyChanged: the node's address shows another host key than the
	// pinned one: another machine answers there.
	FindingHostKeyChanged FindingKind = "HOST_KEY_CHANGED"
	// ServiceStopped: the service is installed and does not run.
	FindingServiceStopped FindingKind = "SERVICE_STOPPED"
	// ServiceMissing: the service is not installed.
	FindingServiceMissing FindingKind = "SERVICE_MISSING"
	// HostnameChanged: the node calls itself by another name than its own.
	FindingHostnameChanged FindingKind = "HOSTNAME_CHANGED"
	// AddressesChanged: the node's addresses differ from those it had.
	FindingAddressesChanged FindingKind = "ADDRESSES_CHANGED"
	// NotChecked: the check could not tell (its task failed otherwise).
	FindingNotChecked FindingKind = "NOT_CHECKED"
)

// Finding is one thing wrong with a node.
type Finding struct {
	Kind    FindingKind `json:"kind"`
	Service string      `json:"service,omitempty"`
	// Detail says what was expected and what was found.
	Detail string `json:"detail"`
}

// Observed is a node as the cluster stores it after a check's tasks: its
// layout and its facts, by namespace (node, service:<name>, ...).
type Observed struct {
	ID          string            `json:"id"`
	NodeNum     int               `json:"nodenum"`
	Hostname    string            `json:"hostname"`
	Services    []string          `json:"services"`
	IPAddresses map[string]string `json:"ipaddresses"`
	Facts       map[string]any    `json:"facts"`
}

// NodeCheck is what a check found of one node.
type NodeCheck struct {
	ID        string    `json:"id"`
	NodeNum   int       `json:"nodenum"`
	Hostname  string    `json:"hostname"`
	Reachable bool      `json:"reachable"`
	Findings  []Finding `json:"findings"`
}

// CheckReport is what a check found of a cluster. Healthy means no node
// has a finding.
type CheckReport struct {
	Job     string      `json:"job"`
	Healthy bool        `json:"healthy"`
	Nodes   []NodeCheck `json:"nodes"`
}

// Dead reports whether the node must be replaced: it is not there, or
// another machine answers at its address.
func (n NodeCheck) Dead() bool {
	return slices.ContainsFunc(n.Findings, func(f Finding) bool {
		return f.Kind == FindingUnreachable || f.Kind == FindingHostKeyChanged
	})
}

// Diagnose compares what the CHECK and STATUS tasks of job recorded in
// the nodes' facts (node.check, service:<name>.check) with the nodes'
// layout and earlier facts. statusOf tells which services have a status
// action: only those are asked. A node whose check facts are not from job
// was not reached by it.
func Diagnose(job string, nodes []Observed, statusOf func(service string) bool) CheckReport {
	r := CheckReport{Job: job, Healthy: true, Nodes: make([]NodeCheck, 0, len(nodes))}
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Observed) int { return a.NodeNum - b.NodeNum })
	for _, n := range nodes {
		nc := NodeCheck{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Findings: []Finding{}}
		nodeFacts, _ := n.Facts["node"].(map[string]any)
		ck, _ := nodeFacts["check"].(map[string]any)
		switch {
		case ck == nil || ck["job"] != job:
			nc.Findings = append(nc.Findings, Finding{Kind: FindingNotChecked, Detail: "the check did not reach the node"})
		case ck["reachable"] != true:
			kind := FindingUnreachable
			if ck["hostKeyChanged"] == true {
				kind = FindingHostKeyChanged
			}
			msg, _ := ck["error"].(string)
			nc.Findings = append(nc.Findings, Finding{Kind: kind, Detail: msg})
		default:
			nc.Reachable = true
			if h, _ := ck["hostname"].(string); h != "" && n.Hostname != "" && h != n.Hostname && shortName(h) != shortName(n.Hostname) {
				nc.Findings = append(nc.Findings, Finding{Kind: FindingHostnameChanged,
					Detail: fmt.Sprintf("the node calls itself %s, want %s", h, n.Hostname)})
			}
			if was, now := addresses(nodeFacts["interfaces"]), addresses(ck["interfaces"]); was != nil && now != nil && !slices.Equal(was, now) {
				nc.Findings = append(nc.Findings, Finding{Kind: FindingAddressesChanged,
					Detail: fmt.Sprintf("addresses %s, were %s", strings.Join(now, " "), strings.Join(was, " "))})
			}
			for _, s := range slices.Sorted(slices.Values(n.Services)) {
				if statusOf == nil || !statusOf(s) {
					continue
				}
				sf, _ := n.Facts["service:"+s].(map[string]any)
				sc, _ := sf["check"].(map[string]any)
				state, _ := sc["state"].(string)
				switch {
				case sc == nil || sc["job"] != job:
					nc.Findings = append(nc.Findings, Finding{Kind: FindingNotChecked, Service: s, Detail: "the service's status could not be asked"})
				case state == "running":
				case state == "stopped":
					nc.Findings = append(nc.Findings, Finding{Kind: FindingServiceStopped, Service: s, Detail: s + " is installed and not running"})
				case state == "missing":
					nc.Findings = append(nc.Findings, Finding{Kind: FindingServiceMissing, Service: s, Detail: s + " is not installed"})
				default:
					nc.Findings = append(nc.Findings, Finding{Kind: FindingNotChecked, Service: s, Detail: fmt.Sprintf("unknown state %q", state)})
				}
			}
		}
		if len(nc.Findings) > 0 {
			r.Healthy = false
		}
		r.Nodes = append(r.Nodes, nc)
	}
	return r
}

func shortName(h string) string {
	s, _, _ := strings.Cut(h, ".")
	return s
}

// addresses lists the global addresses of facts' interfaces
// ([{name, addresses}]), sorted; loopback and link-local ones change
// without meaning anything. Nil when v holds no interfaces.
func addresses(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := []string{}
	for _, it := range list {
		m, _ := it.(map[string]any)
		addrs, _ := m["addresses"].([]any)
		for _, a := range addrs {
			s, _ := a.(string)
			if s == "" || strings.HasPrefix(s, "127.") || s == "::1/128" || strings.HasPrefix(s, "fe80:") {
				continue
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// RepairOf is what a repair does about a check's findings: the dead nodes
// to replace, and by node id the services to install again and those to
// start. Findings a repair cannot act on (a changed hostname or address,
// a service not checked) are left alone.
func RepairOf(r CheckReport) (replace []string, missing, stopped map[string][]string) {
	missing, stopped = map[string][]string{}, map[string][]string{}
	for _, n := range r.Nodes {
		if n.Dead() {
			replace = append(replace, n.ID)
			continue
		}
		for _, f := range n.Findings {
			switch f.Kind {
			case FindingServiceMissing:
				missing[n.ID] = append(missing[n.ID], f.Service)
			case FindingServiceStopped:
				stopped[n.ID] = append(stopped[n.ID], f.Service)
			}
		}
	}
	return replace, missing, stopped
}
