package cmdutil

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestExitCodesDocumented: ExitCodes lists every Exit constant of
// errors.go once, in order, each with a meaning, so the reference page
// written from it (docs/reference/exit-codes.md) misses none.
func TestExitCodesDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []int
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, n := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(n.Name, "Exit") || !ok {
					continue
				}
				code, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatalf("%s = %s: %v", n.Name, lit.Value, err)
				}
				declared = append(declared, code)
			}
		}
	}
	var documented []int
	for _, c := range ExitCodes {
		documented = append(documented, c.Code)
		if c.Meaning == "" {
			t.Errorf("exit code %d has no meaning", c.Code)
		}
	}
	if len(declared) < 14 {
		t.Fatalf("found %d exit codes in errors.go, want at least 14", len(declared))
	}
	if diff := cmp.Diff(declared, documented); diff != "" {
		t.Errorf("ExitCodes differs from the Exit constants of errors.go (-declared +documented):\n%s", diff)
	}
}
