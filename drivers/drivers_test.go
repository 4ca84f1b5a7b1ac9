package drivers

import (
	"context"
	"errors"
	"testing"
)

type nop struct{}

func (nop) Run(context.Context, *Task, Output) Result { return Result{} }

func TestFor(t *testing.T) {
	r := NewRegistry()
	r.Register(Descriptor{Role: RoleVM, Name: "pool"}, nop{})
	r.Register(Descriptor{Role: RoleNode, Name: "ssh"}, nop{})
	r.Register(Descriptor{Role: RoleAutomator, Name: "shell"}, nop{})
	r.Register(Descriptor{Role: RoleNetwork, Name: "hosts"}, nop{})
	task := func(name, ptype, action string, network map[string]any) *Task {
		tk := &Task{TaskName: name}
		tk.Provider.ProviderType, tk.Provider.Network = ptype, network
		if action != "" {
			tk.Service = &Service{Name: "web"}
			tk.Service.Action.Type = action
		}
		return tk
	}
	for _, tc := range []struct {
		task *Task
		role Role
		name string
		ok   bool
	}{
		{task("CREATE", "pool", "", nil), RoleVM, "pool", true},
		{task("DELETE", "aws", "", nil), RoleVM, "aws", false},
		{task("BOOTSTRAP", "pool", "", nil), RoleNode, "ssh", true},
		{task("NETWORK_CONFIGURE", "pool", "", map[string]any{"type": "hosts"}), RoleNetwork, "hosts", true},
		{task("INSTALL", "pool", "shell", nil), RoleAutomator, "shell", true},
		{task("START", "pool", "chef-solo", nil), RoleAutomator, "chef-solo", false},
	} {
		role, name := RoleOf(tc.task)
		if role != tc.role || name != tc.name {
			t.Errorf("%s: %s/%s, want %s/%s", tc.task.TaskName, role, name, tc.role, tc.name)
		}
		_, _, err := r.For(tc.task)
		var nd *ErrNoDriver
		if tc.ok != (err == nil) || (!tc.ok && !errors.As(err, &nd)) {
			t.Errorf("%s: For = %v, want found=%v", tc.task.TaskName, err, tc.ok)
		}
	}
	if d := r.Descriptors(); len(d) != 4 || d[0].Role != RoleAutomator || d[3].Role != RoleVM {
		t.Errorf("descriptors %+v", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering vm/pool twice did not panic")
		}
	}()
	r.Register(Descriptor{Role: RoleVM, Name: "pool"}, nop{})
}
