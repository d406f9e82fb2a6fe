package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const modulePath = "github.com/kubectl-sched/kubectl-sched"

// resolveBinDir finds the folder holding every component (see Options.BinDir).
func resolveBinDir(ctx context.Context, binDir string, lg logger) (string, error) {
	if binDir != "" {
		return binDir, checkBinDir(binDir)
	}
	if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
		err := checkBinDir(env)
		if err == nil {
			return env, nil
		}
		lg.printf("KUBEBUILDER_ASSETS: %v; using hack/build-control-plane.sh", err)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("no binaries: set Options.BinDir or KUBEBUILDER_ASSETS, or run inside the repository: %w", err)
	}
	script := filepath.Join(root, "hack", "build-control-plane.sh")
	lg.printf("running %s (builds the binaries on first use; several minutes)", script)
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if lg.w != nil {
		cmd.Stderr = io.MultiWriter(&stderr, lg.w)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, lastLines(stderr.String(), logTail))
	}
	dir := ""
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			dir = line
		}
	}
	if dir == "" {
		return "", fmt.Errorf("%s printed no folder", script)
	}
	return dir, checkBinDir(dir)
}

func checkBinDir(dir string) error {
	var missing []string
	for _, name := range components {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", dir, strings.Join(missing, ", "))
	}
	return nil
}

// BinDir finds the control-plane binaries as Start does: KUBEBUILDER_ASSETS
// when it holds them all, else hack/build-control-plane.sh's folder (built
// on first use). Progress goes to log, which may be nil.
func BinDir(ctx context.Context, log io.Writer) (string, error) {
	return resolveBinDir(ctx, "", logger{w: log})
}

// CacheRoot is where built binaries and the demo's cluster live, outside
// the repository: $KUBECTL_SCHED_CACHE, else $XDG_CACHE_HOME/kubectl-sched,
// else ~/.cache/kubectl-sched, as hack/build-control-plane.sh has it.
func CacheRoot() string {
	if root := os.Getenv("KUBECTL_SCHED_CACHE"); root != "" {
		return root
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "kubectl-sched")
}

// RepoRoot walks up from the working directory to this module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod of " + modulePath + " not found above the working directory")
		}
		dir = parent
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
