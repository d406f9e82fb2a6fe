package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// podAnnotationDomains runs under TestInstalledHostPolicies' install, with
// --allowed-pod-annotation-domains example.com,kubectl-sched.dev:
// kubectl-sched refuses at apply time a tenant member's task, workflow
// step, finally step, schedule and app service that would pass the
// operator an annotation of another domain (Multus's networks, Calico's
// address, Istio's sidecar, the autoscaler's eviction veto), naming the
// field and the domains allowed; keys of an allowed domain, its subdomains
// and keys without a domain pass.
func podAnnotationDomains(t *testing.T) {
	ctx := context.Background()
	// A tenant's namespace, with the quota the tier policies read, and a
	// member bound to the role tenant create binds.
	ns := testenv.TierNamespace(t, bareClient, "free", "", "")
	alice, err := testenv.BindUser(ctx, bareClient, bare.Config, ns, "alice", "kubectl-sched-tenant",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupName, Resource: "agenttasks"})
	if err != nil {
		t.Fatal(err)
	}

	task := func(k string) client.Object {
		return MakeAgentTask("t", ns).Image("busybox").PodAnnotation(k, "x").Obj()
	}
	const networks = "k8s.v1.cni.cncf.io/networks"
	// The policies take effect asynchronously.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = alice.Create(ctx, task(networks), client.DryRunAll)
		return apierrors.IsForbidden(last), nil
	}); err != nil {
		t.Fatalf("the annotation policy is not enforced: %v", last)
	}

	step := func(name, k string) schedv1.WorkflowStep {
		return schedv1.WorkflowStep{Name: name, Task: schedv1.AgentTaskSpec{Image: "busybox", PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{k: "x"}}}}
	}
	workflow := &schedv1.Workflow{}
	workflow.Name, workflow.Namespace = "w", ns
	workflow.Spec.Steps = []schedv1.WorkflowStep{step("build", "note"), step("mesh", "sidecar.istio.io/inject")}
	finally := &schedv1.Workflow{}
	finally.Name, finally.Namespace = "f", ns
	finally.Spec.Steps = []schedv1.WorkflowStep{step("build", "note")}
	finally.Spec.Finally = []schedv1.WorkflowStep{step("report", "cni.projectcalico.org/ipAddrs")}
	schedule := &schedv1.CronWorkflow{}
	schedule.Name, schedule.Namespace = "c", ns
	schedule.Spec.Schedule = "@hourly"
	schedule.Spec.WorkflowSpec.Steps = []schedv1.WorkflowStep{step("nightly", "cluster-autoscaler.kubernetes.io/safe-to-evict")}
	app := MakeUserDeployment("shop", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		ServicePodAnnotation("web", "prometheus.io/scrape", "true").Obj()

	const allowedHere = "the domains allowed here are example.com, kubectl-sched.dev (--allowed-pod-annotation-domains)"
	for name, tc := range map[string]struct {
		obj  client.Object
		want string
	}{
		"a task's Multus networks": {task(networks), "spec.podMetadata.annotations[" + networks + "]"},
		"a step's Istio sidecar":   {workflow, "spec.steps[mesh].task.podMetadata.annotations[sidecar.istio.io/inject]"},
		"a finally step's address": {finally, "spec.finally[report].task.podMetadata.annotations[cni.projectcalico.org/ipAddrs]"},
		"a schedule's drain veto":  {schedule, "spec.workflowSpec.steps[nightly].task.podMetadata.annotations[cluster-autoscaler.kubernetes.io/safe-to-evict]"},
		"an app's scrape setting":  {app, "spec.services[web].podMetadata.annotations[prometheus.io/scrape]"},
		"a look-alike domain":      {task("notexample.com/x"), "[notexample.com/x]"},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			err := alice.Create(ctx, tc.obj, client.DryRunAll)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), allowedHere) {
				t.Errorf("err = %v, want forbidden naming %q and the domains allowed", err, tc.want)
			}
		})
	}
	for name, obj := range map[string]client.Object{
		"the allowed domain":         task("example.com/team"),
		"a subdomain of it":          task("ci.example.com/run"),
		"the simulated cluster's":    task("sim.kubectl-sched.dev/exit-code"),
		"a key without a domain":     task("note"),
		"steps without other domain": &schedv1.Workflow{ObjectMeta: workflow.ObjectMeta, Spec: schedv1.WorkflowSpec{Steps: workflow.Spec.Steps[:1]}},
	} {
		t.Run("allowed: "+name, func(t *testing.T) {
			if err := alice.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}
