package optionalapi_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var (
	env *testenv.Env
	op  *testenv.Operator
)

// One API server without any optional API, and one operator (the
// UserDeployment controller, with only its generated RBAC) configured to
// use all three: a ClusterSecretStore, a ClusterIssuer and Traefik.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Env:         &env,
		Controllers: []string{"userdeployment"},
		Options: func(o *app.Options) {
			o.Settings.IngressDomain = "apps.test"
			o.Settings.ClusterSecretStore = "vault"
			o.Settings.ClusterIssuer = "letsencrypt"
			o.Settings.IngressProvider = "traefik"
		},
		Operator:    &op,
		OperatorLog: "optionalapi-operator-*.log",
	})
}

// kubeconfig writes an admin kubeconfig for the plugin.
func kubeconfig(t *testing.T) string {
	t.Helper()
	return testenv.AdminKubeconfig(t, &env.ControlPlane, "optional-admin")
}

// reconciles reads the operator's count of finished userdeployment
// reconciles from its metrics endpoint.
func reconciles() (int, error) {
	return op.Reconciles(context.Background(), "userdeployment")
}

// plugin runs `kubectl sched ARGS` in-process, as kubectl would.
func plugin(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := cmd.NewRootCommand(streams)
	root.SetArgs(args)
	code = cmd.Execute(root, streams)
	return out.String(), errOut.String(), code
}

// versionSays waits until `kubectl sched version` prints, for each of
// want, an optional API's line that starts with it, and returns the output.
func versionSays(t *testing.T, kubeconfig string, want ...string) string {
	t.Helper()
	var stdout string
	testenv.EventuallyWithin(t, testenv.Timeout, "kubectl sched version to show the optional APIs", func(context.Context) error {
		var stderr string
		var code int
		stdout, stderr, code = plugin("version", "--kubeconfig", kubeconfig)
		if code != 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		lines := strings.Split(stdout, "\n")
		for _, w := range want {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  "+w) }) {
				return fmt.Errorf("no line starting %q in:\n%s", w, stdout)
			}
		}
		return nil
	})
	return stdout
}
