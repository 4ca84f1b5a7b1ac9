package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// cluster show says which nodes were found unreachable, since when and
// why, and lists the steps the latest job skipped.
func TestWriteClusterWithLostNode(t *testing.T) {
	since := time.Date(2026, 11, 24, 2, 33, 10, 0, time.Local).Format(time.RFC3339)
	reason := "NETWORK_UNCONFIGURE failed (attempt 1, status 1): hosts: read /etc/hosts: ssh root@10.231.0.3:22: dial: dial tcp 10.231.0.3:22: connect: no route to host"
	var cl shownCluster
	doc := `{"id": "00000007", "name": "demo", "status": "TERMINATED", "template": "web-cluster",
		"nodes": [
			{"nodenum": 1001, "hostname": "web7-1001.local", "serviceStates": [{"service": "base", "state": "UNKNOWN"}, {"service": "web", "state": "UNKNOWN"}], "ipaddresses": {"access_v4": "10.231.0.3"},
				"state": "UNREACHABLE", "stateReason": ` + quote(reason) + `, "stateSince": "` + since + `"},
			{"nodenum": 1000, "hostname": "lb7-1000.local", "serviceStates": [{"service": "base", "state": "UNKNOWN"}, {"service": "lb", "state": "UNKNOWN"}], "ipaddresses": {"access_v4": "10.231.0.2"},
				"state": "OK", "stateReason": "", "stateSince": null}],
		"latestJob": {"id": "00000007-002", "action": "CLUSTER_DELETE", "state": "COMPLETE", "tasks": [
			{"nodeId": "n1", "hostname": "lb7-1000.local", "action": "NETWORK_UNCONFIGURE", "service": "", "state": "COMPLETE", "message": "ok"},
			{"nodeId": "n2", "hostname": "web7-1001.local", "action": "NETWORK_UNCONFIGURE", "service": "", "state": "SKIPPED",
				"message": ` + quote("skipped, node unreachable: "+reason) + `}]}}`
	if err := json.Unmarshal([]byte(doc), &cl); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeCluster(&b, &cl); err != nil {
		t.Fatal(err)
	}
	golden(t, "show-lost-node.txt", b.String())
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A skipped step on a node the job removed says so instead of giving a
// bare node id.
func TestWriteClusterSkippedOnRemovedNode(t *testing.T) {
	var cl shownCluster
	doc := `{"id": "00000007", "name": "demo", "status": "ACTIVE", "template": "web-cluster", "nodes": [],
		"latestJob": {"id": "00000007-003", "action": "REPAIR", "state": "COMPLETE", "tasks": [
			{"nodeId": "b7ad702b-0000-5000-8000-000000000000", "hostname": null, "action": "NETWORK_UNCONFIGURE", "service": "", "state": "SKIPPED",
				"message": "skipped, node unreachable: no route to host"}]}}`
	if err := json.Unmarshal([]byte(doc), &cl); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeCluster(&b, &cl); err != nil {
		t.Fatal(err)
	}
	if want := "  NETWORK_UNCONFIGURE on a node since removed (b7ad702b-0000-5000-8000-000000000000): skipped"; !strings.Contains(b.String(), want) {
		t.Errorf("got:\n%s\nwant a line %q", b.String(), want)
	}
}
