// Package verify holds checks on the repository itself.
package verify

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestGeneratedFilesUpToDate regenerates deepcopy, CRDs and RBAC in a copy
// of the sources and fails when the committed files differ: run
// `make generate manifests` and commit the result.
func TestGeneratedFilesUpToDate(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// hack/tools' go.mod and go.sum: controller-gen is that module's tool.
	for _, p := range []string{"go.mod", "go.sum", "Makefile", "api", "operator", "hack/boilerplate.go.txt", "hack/tools/go.mod", "hack/tools/go.sum", "config/crd", "config/rbac"} {
		copyTree(t, filepath.Join(root, p), filepath.Join(tmp, p))
	}
	cmd := exec.Command("make", "generate", "manifests")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make generate manifests: %v\n%s", err, out)
	}
	generated := []string{"api/v1alpha1/zz_generated.deepcopy.go", "config/rbac/role.yaml"}
	crds, _ := filepath.Glob(filepath.Join(tmp, "config/crd/bases/*.yaml"))
	committed, _ := filepath.Glob(filepath.Join(root, "config/crd/bases/*.yaml"))
	if len(crds) != len(committed) {
		t.Errorf("config/crd/bases has %d files, generation makes %d", len(committed), len(crds))
	}
	for _, c := range crds {
		rel, _ := filepath.Rel(tmp, c)
		generated = append(generated, rel)
	}
	for _, rel := range generated {
		want, err := os.ReadFile(filepath.Join(tmp, rel))
		if err != nil {
			t.Errorf("generation did not write %s: %v", rel, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s is not committed; run make generate manifests", rel)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale; run make generate manifests (-generated +committed):\n%s", rel, diff)
		}
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		// Generated outputs are left out so generation must recreate them.
		if strings.HasSuffix(p, "zz_generated.deepcopy.go") || strings.Contains(p, filepath.Join("config", "crd", "bases")) || strings.HasSuffix(p, filepath.Join("config", "rbac", "role.yaml")) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoModTidy fails when go.mod or go.sum would change under `go mod
// tidy`, in the product module or in hack/tools: a requirement marked
// indirect that the code imports, or one no longer used. Run go mod tidy
// there and commit the result.
func TestGoModTidy(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "hack/tools"} {
		cmd := exec.Command("go", "mod", "tidy", "-diff")
		cmd.Dir = filepath.Join(root, dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: go.mod or go.sum is not tidy; run go mod tidy there (%v):\n%s", filepath.Join(dir, "go.mod"), err, out)
		}
	}
}

// TestToolsOutOfGoMod fails when a release or code-generation tool's
// module is back in the product's go.mod: they belong to hack/tools, and
// the product's go.mod lists what the plugin, the operator and their tests
// import. The docker modules stay out too: install reads the docker CLI's
// credentials and asks the registry for a digest itself
// (plugin/internal/registry), and go-containerregistry's authn and remote
// packages, which import the docker CLI's, are for hack/tools.
func TestToolsOutOfGoMod(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Require []struct{ Path string }
		Tool    []struct{ Path string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range mod.Require {
		paths = append(paths, r.Path)
	}
	for _, r := range mod.Tool {
		paths = append(paths, r.Path)
	}
	tools := []string{"github.com/google/ko", "sigs.k8s.io/controller-tools", "sigs.k8s.io/kind", "github.com/sigstore", "github.com/moby/moby",
		"github.com/docker/cli", "github.com/docker/docker", "github.com/docker/docker-credential-helpers"}
	var found []string
	for _, p := range paths {
		for _, tool := range tools {
			if p == tool || strings.HasPrefix(p, tool+"/") {
				found = append(found, p)
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("go.mod has %v: tools go in hack/tools/go.mod (go -C hack/tools get ...), then go mod tidy here drops them; "+
			"the docker modules come with go-containerregistry's authn or remote packages, which the product does not import (plugin/internal/registry asks registries)", found)
	}
}
