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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// InstallPolicies applies the admission policies in config/policy and waits
// until the API server enforces them (policies take effect asynchronously).
func InstallPolicies(ctx context.Context, c client.Client) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "policy", "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		if err := applyFile(ctx, c, f); err != nil {
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
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "only use the outputs of steps before it"), nil
	})
}

func applyFile(ctx context.Context, c client.Client, path string) error {
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
