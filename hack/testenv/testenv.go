// Package testenv starts a real kube-apiserver and etcd for integration
// tests (controller-runtime's envtest) with the binaries that
// hack/build-control-plane.sh builds, so nothing is downloaded at test time.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// RepoRoot is the folder holding go.mod, found from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// BinDir returns the folder holding etcd, kube-apiserver and the rest:
// $KUBEBUILDER_ASSETS when set, else what hack/build-control-plane.sh prints
// (it builds on first use, which takes minutes, and is instant afterwards).
func BinDir() (string, error) {
	binOnce.Do(func() {
		if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
			binDir = d
			return
		}
		root, err := RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		var out, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(root, "hack", "build-control-plane.sh"))
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("hack/build-control-plane.sh failed: %v\n%s", err, stderr.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		binDir = lines[len(lines)-1]
	})
	return binDir, binErr
}

// Env is a running API server with the project's CRDs installed.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
}

// Start runs etcd and kube-apiserver with the CRDs from config/crd/bases.
// Call it once per package, from TestMain, and Stop the result.
func Start() (*Env, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", bin, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c}, nil
}
