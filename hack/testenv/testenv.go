// Package testenv starts a real kube-apiserver and etcd for integration
// tests (controller-runtime's envtest) with the binaries that
// hack/build-control-plane.sh builds, so nothing is downloaded at test time.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// RepoRoot is the folder holding go.mod.
func RepoRoot() (string, error) { return cluster.RepoRoot() }

// Env is a running API server with the project's CRDs installed.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
}

// Start runs etcd and kube-apiserver with the CRDs from config/crd/bases
// and the admission policies from config/policy.
// Call it once per package, from TestMain (Main does), and Stop the result.
// apiServerFlags are more kube-apiserver flags, each "name=value".
func Start(apiServerFlags ...string) (*Env, error) {
	bin, err := cluster.BinDir(context.Background(), os.Stderr)
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
		// envtest's 20 s is too short for kube-apiserver when make test
		// runs four packages on two cores.
		ControlPlaneStartTimeout: time.Minute,
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for _, f := range apiServerFlags {
		name, value, _ := strings.Cut(f, "=")
		args.Set(name, value)
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
	if err := InstallPolicies(context.Background(), c); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("install config/policy: %w", err)
	}
	if err := waitLabelsReserved(context.Background(), cfg, c); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c}, nil
}
