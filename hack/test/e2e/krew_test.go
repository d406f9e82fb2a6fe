package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// TestKrewInstall builds krew from the Go module proxy and installs the
// plugin with it from our manifest and a locally built archive, so krew's
// own validation checks krew/sched.yaml. Without -short Windows is
// installed too (krew selects it with KREW_OS) to cover the .zip and .exe
// entries: cross-compiling the plugin for it shares nothing with this
// platform's builds (minutes from a cold cache), so make test (-short)
// leaves it to make test-release, which CI runs.
func TestKrewInstall(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	krew := strings.TrimSpace(lastLine(run(t, root, nil, "bash", filepath.Join(root, "hack", "build-krew.sh"))))
	out := t.TempDir()
	type platform struct{ goos, goarch, archive string }
	cases := map[string]platform{
		"this platform": {runtime.GOOS, runtime.GOARCH, "kubectl-sched_v0.1.0_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"},
	}
	if !testing.Short() {
		cases["windows"] = platform{"windows", "amd64", "kubectl-sched_v0.1.0_windows_amd64.zip"}
	}
	var platforms []string
	for _, tc := range cases {
		platforms = append(platforms, tc.goos+"/"+tc.goarch)
	}
	run(t, root, nil, "go", "run", "./hack/dist", "-version", "v0.1.0", "-out", out, "-platforms", strings.Join(platforms, ","))
	manifest := filepath.Join(out, "sched.yaml")

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			krewRoot := t.TempDir()
			env := []string{"KREW_ROOT=" + krewRoot, "KREW_OS=" + tc.goos, "KREW_ARCH=" + tc.goarch}
			run(t, root, env, krew, "install", "--manifest="+manifest, "--archive="+filepath.Join(out, tc.archive))
			bin := "kubectl-sched"
			if tc.goos == "windows" {
				bin += ".exe"
			}
			installed := filepath.Join(krewRoot, "store", "sched", "v0.1.0")
			for _, f := range []string{bin, "LICENSE"} {
				if _, err := os.Stat(filepath.Join(installed, f)); err != nil {
					t.Errorf("krew did not install %s: %v", f, err)
				}
			}
			if tc.goos != runtime.GOOS {
				return
			}
			// The installed plugin runs, directly and through kubectl.
			got := run(t, root, env, filepath.Join(krewRoot, "bin", "kubectl-sched"), "version", "--client")
			if got != "Client Version: v0.1.0\n" {
				t.Errorf("kubectl-sched version --client = %q", got)
			}
			kubectl := needKubectl(t)
			path := []string{"PATH=" + filepath.Join(krewRoot, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
			if got := run(t, root, path, kubectl, "sched", "version", "--client"); got != "Client Version: v0.1.0\n" {
				t.Errorf("kubectl sched version --client = %q", got)
			}
			if got := run(t, root, path, kubectl, "plugin", "list"); !strings.Contains(got, filepath.Join(krewRoot, "bin", "kubectl-sched")) {
				t.Errorf("kubectl plugin list does not show the krew-installed plugin:\n%s", got)
			}
		})
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// needKubectl finds kubectl; the end-to-end tests drive the real binary.
func needKubectl(t *testing.T) string {
	t.Helper()
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test needs kubectl (1.26 or later) on PATH, as a user of the plugin has: %v", err)
	}
	return k
}
