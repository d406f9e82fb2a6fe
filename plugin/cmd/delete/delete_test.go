package delete_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

func namespace(t *testing.T, name string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func tasks(t *testing.T, ns string, labels map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		at := builders.MakeAgentTask(n, ns).Image("busybox").Obj()
		at.Labels = labels
		if err := env.Client.Create(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func task(ns, name string) *schedv1.AgentTask {
	return &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		// setup creates the objects in the case's own namespace.
		setup      func(t *testing.T, ns string)
		args       []string
		wantCode   int
		wantStdout string
		wantErr    string
		gone, kept []string
	}{
		"by name": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a", "b") },
			args:       []string{"delete", "at", "a"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted\n",
			gone:       []string{"a"}, kept: []string{"b"},
		},
		"several names, one missing": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a", "b") },
			args:       []string{"delete", "agenttasks", "a", "missing", "b"},
			wantCode:   cmdutil.ExitNotFound,
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted\nagenttask.sched.kubectl-sched.dev \"b\" deleted\n",
			wantErr:    `agenttasks.sched.kubectl-sched.dev "missing" not found`,
			gone:       []string{"a", "b"},
		},
		"missing, ignored": {
			args: []string{"delete", "at", "missing", "--ignore-not-found"},
		},
		"all": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a", "b") },
			args:       []string{"delete", "at", "--all", "--wait"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted\nagenttask.sched.kubectl-sched.dev \"b\" deleted\n",
			gone:       []string{"a", "b"},
		},
		"selector": {
			setup: func(t *testing.T, ns string) {
				tasks(t, ns, map[string]string{"team": "a"}, "a")
				tasks(t, ns, map[string]string{"team": "b"}, "b")
			},
			args:       []string{"delete", "at", "-l", "team=b"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"b\" deleted\n",
			gone:       []string{"b"}, kept: []string{"a"},
		},
		"dry run on the server": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a") },
			args:       []string{"delete", "at/a", "--dry-run=server"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted (server dry run)\n",
			kept:       []string{"a"},
		},
		"dry run on the client": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a") },
			args:       []string{"delete", "at", "a", "--dry-run"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted (dry run)\n",
			kept:       []string{"a"},
		},
		"wait": {
			setup:      func(t *testing.T, ns string) { tasks(t, ns, nil, "a") },
			args:       []string{"delete", "at", "a", "--wait"},
			wantStdout: "agenttask.sched.kubectl-sched.dev \"a\" deleted\n",
			gone:       []string{"a"},
		},
		"nothing named": {
			args: []string{"delete", "at"}, wantCode: cmdutil.ExitUsage, wantErr: "name what to delete",
		},
		"names and --all": {
			args: []string{"delete", "at", "a", "--all"}, wantCode: cmdutil.ExitUsage, wantErr: "names cannot be combined",
		},
		"unknown kind": {
			args: []string{"delete", "job", "a"}, wantCode: cmdutil.ExitUsage, wantErr: `unknown kind "job"`,
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		ns := fmt.Sprintf("delete-%d", i)
		t.Run(name, func(t *testing.T) {
			namespace(t, ns)
			if tc.setup != nil {
				tc.setup(t, ns)
			}
			res := env.Run(append(tc.args, "-n", ns)...)
			if res.Code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.Code, tc.wantCode, res.Stderr)
			}
			if diff := cmp.Diff(tc.wantStdout, res.Stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Stderr, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, res.Stderr)
			}
			for _, n := range tc.gone {
				// Without --wait the deletion is asked for; AgentTasks have
				// no finalizers, so the object is gone at once.
				if exists(t, task(ns, n)) {
					t.Errorf("%s still exists", n)
				}
			}
			for _, n := range tc.kept {
				if !exists(t, task(ns, n)) {
					t.Errorf("%s was deleted", n)
				}
			}
		})
	}
}

func TestDeleteWaitTimesOut(t *testing.T) {
	namespace(t, "delete-finalizer")
	at := builders.MakeAgentTask("held", "delete-finalizer").Image("busybox").Obj()
	at.Finalizers = []string{"example.com/hold"}
	if err := env.Client.Create(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	res := env.Run("delete", "at", "held", "-n", "delete-finalizer", "--wait", "--timeout", "1s")
	if res.Code != cmdutil.ExitWatchTimeout || !strings.Contains(res.Stderr, `timed out after 1s waiting for agenttasks.sched.kubectl-sched.dev "held" to be deleted`) {
		t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	// Release it, and check the deletion then completes.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(context.Background(), at, patch); err != nil {
		t.Fatal(err)
	}
	if exists(t, at) {
		t.Error("the task outlived its finalizer")
	}
}

func TestDeleteSchedExtAndForbidden(t *testing.T) {
	scx := builders.MakeSchedExt("gone").Scheduler("scx_lavd").Obj()
	if err := env.Client.Create(context.Background(), scx); err != nil {
		t.Fatal(err)
	}
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	res := plugintest.RunWithInput("", "delete", "scx", "gone", "--kubeconfig", nobody)
	if res.Code != cmdutil.ExitForbidden || !strings.Contains(res.Stderr, `forbidden: user "nobody" may not delete schedexts.sched.kubectl-sched.dev "gone" at the cluster scope`) {
		t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	// -n does not apply to a cluster-scoped kind.
	res = env.Run("delete", "scx", "gone", "-n", "whatever")
	if res.Code != 0 || res.Stdout != "schedext.sched.kubectl-sched.dev \"gone\" deleted\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
}
