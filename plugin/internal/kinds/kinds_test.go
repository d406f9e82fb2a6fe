package kinds

import "testing"

func TestLookupTaskAlias(t *testing.T) {
	for _, name := range []string{"task", "tasks", "Task", "at", "agenttask"} {
		if k, ok := Lookup(name); !ok || k.Kind != "AgentTask" {
			t.Errorf("Lookup(%q) = %v, %v; want AgentTask", name, k.Kind, ok)
		}
	}
	if _, ok := Lookup("taskx"); ok {
		t.Errorf("Lookup(taskx) found a kind")
	}
}
