package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// Sim is a running simulated cluster (hack/cluster) with the CRDs installed:
// for tests whose pods must be scheduled, run and finish.
type Sim struct {
	*cluster.Cluster
	Config *rest.Config
	Client client.Client
	dir    string
}

// StartSim starts a simulated cluster in a temporary folder and installs
// the CRDs. Call it once per package, from TestMain (Main does), and Stop
// the result.
// extraKCMArgs go to kube-controller-manager (benchmarks raise its QPS).
func StartSim(extraKCMArgs ...string) (*Sim, error) {
	return StartSimWith(cluster.Options{ExtraControllerManagerArgs: extraKCMArgs})
}

// StartSimWith is StartSim with the cluster's options (nodes, component
// flags); Dir and Log are filled in.
func StartSimWith(o cluster.Options) (*Sim, error) {
	s, err := StartBareSim(o)
	if err != nil {
		return nil, err
	}
	if err := InstallCRDs(s.Config); err != nil {
		_ = s.Stop(false)
		return nil, err
	}
	// A client made now finds the new kinds at once.
	if s.Client, err = client.New(s.Config, client.Options{Scheme: app.Scheme()}); err != nil {
		_ = s.Stop(false)
		return nil, err
	}
	if err := InstallPolicies(context.Background(), s.Client); err != nil {
		_ = s.Stop(false)
		return nil, fmt.Errorf("install config/policy: %w", err)
	}
	if err := waitLabelsReserved(context.Background(), s.Config, s.Client); err != nil {
		_ = s.Stop(false)
		return nil, err
	}
	return s, nil
}

// StartBareSim starts a simulated cluster as StartSimWith does, without
// the CRDs, the policies or the users' roles: for tests of what a fresh
// install meets (InstallCRDs, InstallPolicies and StartOperator add them).
func StartBareSim(o cluster.Options) (*Sim, error) {
	dir, err := os.MkdirTemp("", "kubectl-sched-sim-")
	if err != nil {
		return nil, err
	}
	o.Dir, o.Log = dir, os.Stderr
	c, err := cluster.Start(context.Background(), o)
	if err != nil {
		return nil, fmt.Errorf("start the simulated cluster (logs in %s): %w", dir, err)
	}
	s := &Sim{Cluster: c, dir: dir}
	if s.Config, err = c.RESTConfig(); err != nil {
		_ = s.Stop(false)
		return nil, err
	}
	if s.Client, err = client.New(s.Config, client.Options{Scheme: app.Scheme()}); err != nil {
		_ = s.Stop(false)
		return nil, err
	}
	return s, nil
}

// Stop stops the cluster and, when keep is false, deletes its folder; keep
// it when tests failed so the component logs can be read.
func (s *Sim) Stop(keep bool) error {
	err := s.Cluster.Stop()
	if keep {
		fmt.Fprintf(os.Stderr, "simulated cluster state and logs kept in %s\n", s.dir)
		return err
	}
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// InstallCRDs installs config/crd/bases and waits until they are served.
func InstallCRDs(cfg *rest.Config) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
	})
	return err
}
