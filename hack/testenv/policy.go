package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// InstallPolicies applies the admission policies in config/policy and the
// users' roles (kubectl-sched-edit, kubectl-sched-view), and waits until the
// API server enforces the policies (they take effect asynchronously).
func InstallPolicies(ctx context.Context, c client.Client) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "policy", "*.yaml"))
	if err != nil {
		return err
	}
	files = append(files, filepath.Join(root, "config", "rbac", "user_roles.yaml"))
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		if err := ApplyFile(ctx, c, f); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	// A workflow whose first step uses a later one must be refused.
	probe := &schedv1.Workflow{}
	probe.Name, probe.Namespace = "policy-probe", "default"
	probe.Spec.Steps = []schedv1.WorkflowStep{
		{Name: "a", Task: schedv1.AgentTaskSpec{Image: "x", Args: []string{"${steps.b.output.k}"}}},
		{Name: "b", Task: schedv1.AgentTaskSpec{Image: "x"}},
	}
	// And an approval that names someone other than its user.
	forged := &schedv1.Workflow{}
	forged.Name, forged.Namespace = "policy-probe", "default"
	forged.Spec.Steps = []schedv1.WorkflowStep{{Name: "gate", Approval: &schedv1.StepApproval{}}}
	forged.Spec.Approvals = []schedv1.StepDecision{{Step: "gate", Decision: schedv1.Approved, User: "policy-probe-someone-else"}}
	// And a privileged task.
	privileged := &schedv1.AgentTask{}
	privileged.Name, privileged.Namespace = "policy-probe", "default"
	privileged.Spec.Image = "x"
	privileged.Spec.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true)}
	// And a pod that claims a Job as its controller.
	claimant := &corev1.Pod{}
	claimant.Name, claimant.Namespace = "policy-probe", "default"
	claimant.Spec.Containers = []corev1.Container{{Name: "c", Image: "x"}}
	claimant.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "probe", UID: "probe", Controller: ptr.To(true)}}
	// And a change of a Workflow's steps: the probe is created for real,
	// its update tried.
	fixed := &schedv1.Workflow{}
	fixed.Name, fixed.Namespace = "policy-probe-fixed", "default"
	fixed.Spec.Steps = []schedv1.WorkflowStep{{Name: "a", Task: schedv1.AgentTaskSpec{Image: "x"}}}
	if err := c.Create(ctx, fixed); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = c.Delete(context.Background(), fixed) }()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		changed := &schedv1.Workflow{}
		if last = c.Get(ctx, client.ObjectKeyFromObject(fixed), changed); last != nil {
			return false, nil
		}
		changed.Spec.Steps[0].Task.Image = "y"
		last = c.Update(ctx, changed, client.DryRunAll)
		if last == nil || !strings.Contains(last.Error(), "spec cannot change once it is created") {
			return false, nil
		}
		last = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if last == nil || !strings.Contains(last.Error(), "only use the outputs of steps before it") {
			return false, nil
		}
		last = c.Create(ctx, forged.DeepCopy(), client.DryRunAll)
		if last == nil || !strings.Contains(last.Error(), "a decision records the user who makes it") {
			return false, nil
		}
		last = c.Create(ctx, privileged.DeepCopy(), client.DryRunAll)
		if last == nil || !strings.Contains(last.Error(), "privileged containers are not allowed") {
			return false, nil
		}
		last = c.Create(ctx, claimant.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "only the Job controller creates the pods of a Job"), nil
	})
	if err != nil {
		return fmt.Errorf("the policies are not enforced (last answer: %v): %w", last, err)
	}
	return nil
}

// ApplyFile applies every object of a YAML file as field manager testenv.
func ApplyFile(ctx context.Context, c client.Client, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("testenv"), client.ForceOwnership); err != nil {
			return err
		}
	}
}

// ApplyTiers applies the shipped tiers (config/manager/tiers.yaml) and
// the priority classes they name, as an install does. The tiers ConfigMap
// lives in the operator's namespace: call it once the operator runs
// (MainOptions.AfterOperator).
func ApplyTiers(ctx context.Context, c client.Client) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	for _, f := range []string{"tiers.yaml", "priorityclasses.yaml"} {
		if err := ApplyFile(ctx, c, filepath.Join(root, "config", "manager", f)); err != nil {
			return err
		}
	}
	return nil
}
