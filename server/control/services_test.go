package control

import "testing"

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		action, taskState, lifecycle, observed, want string
	}{
		{"INSTALL", "COMPLETE", "INSTALL", "", ServiceInstalled},
		{"CONFIGURE", "COMPLETE", "INSTALL", "", ServiceConfigured},
		{"INITIALIZE", "COMPLETE", "INSTALL", "", ServiceInitialized},
		{"START", "COMPLETE", "START", "", ServiceRunning},
		{"STOP", "COMPLETE", "STOP", "", ServiceStopped},
		{"REMOVE", "COMPLETE", "REMOVE", "", ServiceRemoved},
		// A reconfigured service keeps running, or stays stopped.
		{"CONFIGURE", "COMPLETE", "START", "", ServiceRunning},
		{"CONFIGURE", "COMPLETE", "STOP", "", ServiceStopped},
		{"INITIALIZE", "COMPLETE", "START", "", ServiceRunning},
		// A configure with no lifecycle task (a service without install).
		{"CONFIGURE", "COMPLETE", "", "", ServiceConfigured},
		// Whatever failed last is what shows.
		{"START", "FAILED", "STOP", "", ServiceFailed},
		{"CONFIGURE", "FAILED", "START", "", ServiceFailed},
		// A check's STATUS shows what it found; without a finding, what
		// came before.
		{"STATUS", "COMPLETE", "START", "stopped", ServiceStopped},
		{"STATUS", "COMPLETE", "STOP", "running", ServiceRunning},
		{"STATUS", "COMPLETE", "START", "missing", ServiceRemoved},
		{"STATUS", "COMPLETE", "START", "", ServiceRunning},
		{"STATUS", "COMPLETE", "", "", ServiceConfigured},
	} {
		if got := stateOf(tc.action, tc.taskState, tc.lifecycle, tc.observed); got != tc.want {
			t.Errorf("%s %s after %q: %s, want %s", tc.action, tc.taskState, tc.lifecycle, got, tc.want)
		}
	}
}

func TestServiceSummaryString(t *testing.T) {
	s := ServiceSummary{Service: "web", Nodes: 3, States: []StateCount{{ServiceRunning, 2}, {ServiceStopped, 1}}}
	if got, want := s.String(), "web: running on 2/3, stopped on 1/3"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
