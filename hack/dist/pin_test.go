package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The release step pins config/manager to the release: the image tag and
// the version label change, nothing else does.
func TestPinOperator(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config", "manager")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, f := range []string{"kustomization.yaml", "manager.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = string(data)
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := pinOperator(root, "v9.8.7"); err != nil {
		t.Fatal(err)
	}
	for f, wantLine := range map[string]string{"kustomization.yaml": "    newTag: v9.8.7", "manager.yaml": "    app.kubernetes.io/version: v9.8.7"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, was := strings.Split(string(data), "\n"), strings.Split(before[f], "\n")
		if len(got) != len(was) {
			t.Fatalf("%s: %d lines, was %d", f, len(got), len(was))
		}
		changed := 0
		for i := range got {
			if got[i] != was[i] {
				changed++
				if got[i] != wantLine {
					t.Errorf("%s: line %d is %q, want %q", f, i+1, got[i], wantLine)
				}
			}
		}
		if changed != 1 && !strings.Contains(before[f], wantLine) {
			t.Errorf("%s: %d lines changed, want 1", f, changed)
		}
	}
}
