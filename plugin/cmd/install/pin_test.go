package install_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// operatorImage is the image of the Deployment in install's output, and its
// version label.
func operatorImage(t *testing.T, stdout string) (string, string) {
	t.Helper()
	for _, o := range decodeAll(t, strings.NewReader(stdout)) {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c := cs[0].(map[string]any)
		image := c["image"].(string)
		// The tools image follows the operator's (TOOLS_IMAGE empty).
		env, _ := c["env"].([]any)
		toolsImage := ""
		for _, e := range env {
			if m := e.(map[string]any); m["name"] == "OPERATOR_IMAGE" {
				toolsImage, _ = m["value"].(string)
			}
		}
		if toolsImage != image {
			t.Errorf("OPERATOR_IMAGE %q, want the operator's image %q", toolsImage, image)
		}
		return image, o.GetLabels()["app.kubernetes.io/version"]
	}
	t.Fatalf("no Deployment in:\n%.2000s", stdout)
	return "", ""
}

func TestInstallRefusesImageWithoutTagOrDigest(t *testing.T) {
	for _, image := range []string{"registry.example.com/kubectl-sched/operator", "localhost:5000/operator"} {
		res := plugintest.RunWithInput("", "install", "--dry-run=client", "--image", image)
		if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, image+":TAG") || !strings.Contains(res.Stderr, image+"@sha256:") {
			t.Errorf("--image %s: exit %d, want %d saying to give :TAG or @sha256:...; stderr %q", image, res.Code, cmdutil.ExitUsage, res.Stderr)
		}
	}
}

// A tag is pinned to what the registry serves; a digest is kept; an
// unreachable registry leaves the tag with one warning line.
func TestInstallPinsImageByDigest(t *testing.T) {
	tagged := testenv.Registry(t) + "/kubectl-sched/operator:v9.9.9"
	digest := testenv.PushImage(t, tagged)

	t.Run("tag", func(t *testing.T) {
		res := plugintest.RunWithInput("", "install", "--dry-run=client", "-o", "yaml", "--image", tagged)
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		got, version := operatorImage(t, res.Stdout)
		if want := tagged + "@" + digest; got != want || version != "v9.9.9" {
			t.Errorf("image %s, version %q; want %s, v9.9.9", got, version, want)
		}
		if res.Stderr != "" {
			t.Errorf("stderr %q", res.Stderr)
		}
	})
	t.Run("digest", func(t *testing.T) {
		pinned := strings.TrimSuffix(tagged, ":v9.9.9") + "@" + digest
		res := plugintest.RunWithInput("", "install", "--dry-run=client", "-o", "yaml", "--image", pinned)
		if got, _ := operatorImage(t, res.Stdout); res.Code != 0 || got != pinned || res.Stderr != "" {
			t.Errorf("exit %d, image %s, want %s as given; stderr %q", res.Code, got, pinned, res.Stderr)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		// Port 1 refuses at once, as an air-gapped cluster's registry would
		// be unreachable; the image may still be on the nodes.
		unreachable := "127.0.0.1:1/kubectl-sched/operator:v9.9.9"
		res := plugintest.RunWithInput("", "install", "--dry-run=client", "-o", "yaml", "--image", unreachable)
		if got, _ := operatorImage(t, res.Stdout); res.Code != 0 || got != unreachable {
			t.Errorf("exit %d, image %s, want %s kept", res.Code, got, unreachable)
		}
		lines := strings.Split(strings.TrimSuffix(res.Stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "Warning: operator image "+unreachable+" is not pinned") || !strings.Contains(lines[0], "--image "+unreachable+"@sha256:") {
			t.Errorf("stderr %q, want one warning saying it is not pinned and how to pin it", res.Stderr)
		}
	})
}
