package app_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-sched/kubectl-sched/config"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// shutdownMargin is what the pod's grace period must leave beyond the
// manager's own bound: the process's exit and the kubelet's signal.
const shutdownMargin = 5 * time.Second

// TestPodOutlivesGracefulShutdown checks the operator's Deployment (as
// config/manager ships it and install applies it) against the options its
// args give the manager: the kubelet's SIGKILL must come after the manager
// has waited out its reconciles (GracefulShutdownTimeout) and released the
// Lease (up to RenewDeadline), else a killed leader keeps the Lease and the
// standby waits LeaseDuration to take over.
func TestPodOutlivesGracefulShutdown(t *testing.T) {
	data, err := config.Manifests.ReadFile("manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var d appsv1.Deployment
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			dep = &d
		}
	}
	if dep == nil {
		t.Fatal("config/manager/manager.yaml has no Deployment")
	}
	pod := dep.Spec.Template.Spec
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("the operator's pod must set terminationGracePeriodSeconds")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second

	// The manager's options as its args set them, parsed by its own flags.
	o := app.DefaultOptions()
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	o.BindFlags(fs)
	var args []string
	for _, c := range pod.Containers {
		if c.Name == "manager" {
			args = c.Args
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the Deployment's args: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !o.LeaderElect {
		t.Fatal("the shipped operator runs with --leader-elect; this check is about its Lease")
	}
	if need := o.GracefulShutdownTimeout + o.RenewDeadline + shutdownMargin; grace < need {
		t.Errorf("terminationGracePeriodSeconds is %v; the manager may take %v to stop (--graceful-shutdown-timeout %v) and %v more to release its Lease (--leader-elect-renew-deadline): give the pod at least %v",
			grace, o.GracefulShutdownTimeout, o.GracefulShutdownTimeout, o.RenewDeadline, need)
	}
}
