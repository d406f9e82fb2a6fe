package cmdutil

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestForbidden(t *testing.T) {
	tasks := schema.GroupResource{Group: "sched.kubectl-sched.dev", Resource: "agenttasks"}
	cases := map[string]struct {
		err       error
		msg, hint []string
	}{
		"RBAC in a namespace": {
			err:  apierrors.NewForbidden(tasks, "hello", errors.New(`User "bob" cannot get resource "agenttasks" in API group "sched.kubectl-sched.dev" in the namespace "payments"`)),
			msg:  []string{`forbidden: user "bob" may not get agenttasks.sched.kubectl-sched.dev "hello" in namespace "payments"`},
			hint: []string{`Ask an admin of namespace payments for "get" on agenttasks.sched.kubectl-sched.dev there`, "kubectl-sched-tenant", "'kubectl auth can-i get agenttasks.sched.kubectl-sched.dev -n payments' checks."},
		},
		"RBAC on a subresource": {
			err:  apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-1", errors.New(`User "bob" cannot get resource "pods/log" in API group "" in the namespace "payments"`)),
			msg:  []string{`forbidden: user "bob" may not get pods/log "web-1" in namespace "payments"`},
			hint: []string{`for "get" on pods/log there`, "'kubectl auth can-i get pods --subresource=log -n payments' checks."},
		},
		"RBAC at the cluster scope": {
			err:  apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New(`User "alice" cannot list resource "namespaces" in API group "" at the cluster scope`)),
			msg:  []string{`forbidden: user "alice" may not list namespaces at the cluster scope`},
			hint: []string{"ask a cluster admin for a ClusterRole that allows \"list\" on namespaces", "'kubectl auth can-i list namespaces' checks."},
		},
		// An admission policy's refusal is exit 7 and a quota's 9
		// (TestAPIExitCodes); other admission checks stay forbidden.
		"another admission check": {
			err:  apierrors.NewForbidden(tasks, "hello", errors.New(`unable to create new content in namespace payments because it is being terminated`)),
			msg:  []string{"forbidden: the cluster refused to create agenttasks.sched.kubectl-sched.dev \"hello\":", "it is being terminated"},
			hint: []string{"Not a missing permission"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := API(tc.err, "create", `agenttasks.sched.kubectl-sched.dev "hello"`)
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitForbidden {
				t.Fatalf("got %v, want an *Error with exit code %d", err, ExitForbidden)
			}
			for _, w := range tc.msg {
				if !strings.Contains(e.Msg, w) {
					t.Errorf("message %q lacks %q", e.Msg, w)
				}
			}
			for _, w := range tc.hint {
				if !strings.Contains(e.Hint, w) {
					t.Errorf("hint %q lacks %q", e.Hint, w)
				}
			}
		})
	}
}
