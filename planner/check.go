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
	// Unchecked are the node's services a check has no way to look at:
	// neither a status action nor systemd units. They are no finding (the
	// node may be healthy) but are shown, so that nobody reads "healthy"
	// as "every service runs".
	Unchecked []string `json:"unchecked,omitempty"`
}

// ServiceProbe says how a check learns whether a service runs
// (docs/catalog.md#systemd-units): its status action when it has one (a
// STATUS task asks it), else its systemd units (the node's CHECK asks
// systemd), else not at all.
type ServiceProbe struct {
	Status bool
	Units  []string
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
// layout and earlier facts. probeOf tells how each service is looked at:
// by its status action, by its systemd units, or not at all. A node whose
// check facts are not from job was not reached by it.
func Diagnose(job string, nodes []Observed, probeOf func(service string) ServiceProbe) CheckReport {
	r := CheckReport{Job: job, Healthy: true, Nodes: make([]NodeCheck, 0, len(nodes))}
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Observed) int { return a.NodeNum - b.NodeNum })
	for _, n := range nodes {
		nc := NodeCheck{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Findings: []Finding{}}
		nodeFacts, _ := n.Facts["node"].(map[string]any)
		ck, _ := nodeFacts["check"].(map[string]any)
		services := slices.Sorted(slices.Values(n.Services))
		probes := make([]ServiceProbe, len(services))
		for i, s := range services {
			if probeOf != nil {
				probes[i] = probeOf(s)
			}
			if !probes[i].Status && len(probes[i].Units) == 0 {
				nc.Unchecked = append(nc.Unchecked, s)
			}
		}
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
			for i, s := range services {
				var f *Finding
				switch p := probes[i]; {
				case p.Status:
					f = statusFinding(job, s, n.Facts["service:"+s])
				case len(p.Units) > 0:
					f = unitsFinding(s, p.Units, ck)
				}
				if f != nil {
					nc.Findings = append(nc.Findings, *f)
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

// statusFinding is what service s's STATUS task of job recorded in its
// facts (check = {job, state}), as a finding; nil when it runs.
func statusFinding(job, s string, facts any) *Finding {
	sf, _ := facts.(map[string]any)
	sc, _ := sf["check"].(map[string]any)
	state, _ := sc["state"].(string)
	switch {
	case sc == nil || sc["job"] != job:
		return &Finding{Kind: FindingNotChecked, Service: s, Detail: "the service's status could not be asked"}
	case state == "running":
		return nil
	case state == "stopped":
		return &Finding{Kind: FindingServiceStopped, Service: s, Detail: s + " is installed and not running"}
	case state == "missing":
		return &Finding{Kind: FindingServiceMissing, Service: s, Detail: s + " is not installed"}
	}
	return &Finding{Kind: FindingNotChecked, Service: s, Detail: fmt.Sprintf("unknown state %q", state)}
}

// unitsFinding is what the node's CHECK learned from systemd of service
// s's units (check.units = {unit: {load, active, sub}}, check.systemd
// false when the node runs no systemd), as a finding; nil when every unit
// runs. A unit not found makes the service missing; one loaded and not
// active, stopped; one systemd cannot load, or not asked, not checked.
// The worst of its units is the service's finding.
func unitsFinding(s string, units []string, ck map[string]any) *Finding {
	asked, _ := ck["units"].(map[string]any)
	var missing, stopped, unknown []string
	for _, u := range units {
		st, ok := asked[u].(map[string]any)
		if !ok {
			why := "not asked"
			if ck["systemd"] == false {
				why = "not asked: the node runs no systemd"
			}
			unknown = append(unknown, u+" "+why)
			continue
		}
		load, _ := st["load"].(string)
		active, _ := st["active"].(string)
		sub, _ := st["sub"].(string)
		state := fmt.Sprintf("%s %s (%s)", u, active, sub)
		switch {
		case load == "not-found":
			missing = append(missing, u)
		case load != "loaded" && load != "masked":
			unknown = append(unknown, fmt.Sprintf("%s cannot be loaded by systemd (%s)", u, load))
		case running(active, sub):
			// Running, masked or not: masking stops no running unit.
		case load == "masked":
			stopped = append(stopped, u+" masked, "+active)
		default:
			stopped = append(stopped, state)
		}
	}
	switch {
	case len(missing) > 0:
		return &Finding{Kind: FindingServiceMissing, Service: s, Detail: fmt.Sprintf("%s is not installed: no unit %s", s, strings.Join(missing, ", "))}
	case len(stopped) > 0:
		return &Finding{Kind: FindingServiceStopped, Service: s, Detail: fmt.Sprintf("%s is installed and not running: %s", s, strings.Join(stopped, ", "))}
	case len(unknown) > 0:
		return &Finding{Kind: FindingNotChecked, Service: s, Detail: "systemd unit " + strings.Join(unknown, ", ")}
	}
	return nil
}

// running reports whether a unit in systemd's active and sub state runs
// or is on its way to: a unit crash-looping passes through activating
// (auto-restart-queued, from systemd 254) and sits in auto-restart between
// tries, which is not running.
func running(active, sub string) bool {
	switch active {
	case "active", "reloading", "activating", "refreshing":
		return !strings.HasPrefix(sub, "auto-restart")
	}
	return false
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
