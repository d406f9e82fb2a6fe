package verify

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

const module = "github.com/kubectl-sched/kubectl-sched/"

// TestPluginImports holds the plugin to its layers: a command package
// (plugin/cmd/NAME, and its own subpackages) imports no other command, the
// root plugin/cmd wiring them all; and no other package imports a command
// but the plugin's main package and what is under hack/ (test support
// that runs whole commands: hack/testenv/plugintest, watchtest). What two
// commands share goes in plugin/internal. The packages under plugin/ are
// held to it with their tests; the operator's tests that run the plugin
// on the simulated cluster still import plugin/cmd.
func TestPluginImports(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} | {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		imports, testImports, _ := strings.Cut(sc.Text(), " | ")
		fields := strings.Fields(imports)
		pkg := strings.TrimPrefix(fields[0], module)
		if strings.HasPrefix(pkg, "plugin/") {
			fields = append(fields, strings.Fields(testImports)...)
		}
		seen := map[string]bool{}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if why := importRule(pkg, imp); why != "" && !seen[imp] {
				seen[imp] = true
				bad = append(bad, pkg+" imports "+imp+": "+why)
			}
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// importRule says why pkg may not import imp, "" when it may.
func importRule(pkg, imp string) string {
	cmdOf := func(p string) string { // "plugin/cmd/task" for plugin/cmd/task/...
		if !strings.HasPrefix(p, "plugin/cmd/") {
			return ""
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(p, "plugin/cmd/"), "/")
		return "plugin/cmd/" + name
	}
	importsCmd := imp == "plugin/cmd" || strings.HasPrefix(imp, "plugin/cmd/")
	switch {
	case cmdOf(pkg) != "":
		if importsCmd && cmdOf(imp) != cmdOf(pkg) {
			return "a command imports no other command; move what they share to plugin/internal"
		}
	case pkg == "plugin/cmd", pkg == "plugin":
	case strings.HasPrefix(pkg, "hack/"):
	case importsCmd:
		return "only plugin/cmd, the plugin's main package and test support under hack/ import commands"
	}
	return ""
}

func TestImportRule(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		ok       bool
	}{
		{"plugin/cmd/doctor", "plugin/internal/manifests", true},
		{"plugin/cmd/doctor", "plugin/cmd/install", false},
		{"plugin/cmd/task", "plugin/cmd", false},
		{"plugin/cmd/placement/sub", "plugin/cmd/placement", true},
		{"plugin/cmd/placement/sub", "plugin/cmd/describe", false},
		{"plugin/cmd", "plugin/cmd/task", true},
		{"plugin", "plugin/cmd", true},
		{"plugin/internal/kube", "plugin/cmd", false},
		{"plugin/internal/quota", "plugin/cmd/tenant", false},
		{"hack/test/members", "plugin/cmd/tenant", true},
		{"operator/app", "plugin/cmd/version", false},
		{"hack/testenv/plugintest", "plugin/cmd", true},
		{"hack/docgen", "plugin/cmd", true},
	} {
		if got := importRule(tc.pkg, tc.imp) == ""; got != tc.ok {
			t.Errorf("%s imports %s: allowed %v, want %v", tc.pkg, tc.imp, got, tc.ok)
		}
	}
}
