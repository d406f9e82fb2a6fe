package verify

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestTestOnlyPackagesUnderHackTest keeps the test tree in one place: a
// package that holds only tests (no Go file but doc.go) lives under
// hack/test, and hack/test holds nothing else; what tests share is test
// support, in hack/testenv.
func TestTestOnlyPackagesUnderHackTest(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .GoFiles " "}}|{{len .TestGoFiles}}|{{len .XTestGoFiles}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list printed %q", line)
		}
		pkg := strings.TrimPrefix(f[0], module)
		if why := layoutRule(pkg, strings.Fields(f[1]), f[2] != "0" || f[3] != "0"); why != "" {
			t.Errorf("%s: %s", pkg, why)
		}
		if strings.HasPrefix(pkg, "hack/test/") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("go list shows no package under hack/test:\n%s", out)
	}
}

// layoutRule says why a package with these Go files (tests aside) is in
// the wrong place, "" when it is not.
func layoutRule(pkg string, goFiles []string, hasTests bool) string {
	testOnly := hasTests && (len(goFiles) == 0 || len(goFiles) == 1 && goFiles[0] == "doc.go")
	inTree := strings.HasPrefix(pkg, "hack/test/")
	switch {
	case testOnly && !inTree:
		return "holds only tests: move it under hack/test (git mv, in a commit of its own)"
	case inTree && !testOnly:
		return "hack/test holds only tests (and a doc.go): move " + strings.Join(goFiles, ", ") + " to hack/testenv"
	}
	return ""
}

func TestLayoutRule(t *testing.T) {
	for _, tc := range []struct {
		pkg      string
		goFiles  []string
		hasTests bool
		ok       bool
	}{
		{"hack/test/e2e", nil, true, true},
		{"hack/test/chaos", []string{"doc.go"}, true, true},
		{"operator/teardown", []string{"doc.go"}, true, false},
		{"plugin/bench", nil, true, false},
		{"operator/agenttask", []string{"controller.go", "doc.go"}, true, true},
		{"hack/test/e2e", []string{"helpers.go"}, true, false},
		{"api/builders", []string{"builders.go"}, false, true},
		{"hack/tour", []string{"env.go"}, true, true},
	} {
		if got := layoutRule(tc.pkg, tc.goFiles, tc.hasTests) == ""; got != tc.ok {
			t.Errorf("%s %v (tests %v): allowed %v, want %v", tc.pkg, tc.goFiles, tc.hasTests, got, tc.ok)
		}
	}
}
