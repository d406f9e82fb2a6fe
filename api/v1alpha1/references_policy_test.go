package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	"github.com/kubectl-sched/kubectl-sched/api/substitution/substitutiontest"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// referencesPolicy is config/policy/workflow_references.yaml, which
// re-implements in CEL the grammar and the reference rules of
// api/substitution for `kubectl apply` users.
const referencesPolicy = "ValidatingAdmissionPolicy 'kubectl-sched-workflow-references'"

// TestWorkflowReferencesPolicyAgreesWithSubstitution puts each string of
// substitutiontest.Corpus into a step of a Workflow, and again into a
// finally step, and requires the API
// server (CRD rules and the policy) and substitution.ValidateWorkflow,
// which the plugin and the operator run, to give the same verdict: a
// Workflow the server admits must be one the operator runs, and one the
// plugin refuses must not be admitted by `kubectl apply`. api/substitution
// is the reference: when they disagree, the policy is what to fix. The same
// workflow as a CronWorkflow's workflowSpec gets the same verdict, its
// refusal naming spec.workflowSpec.
func TestWorkflowReferencesPolicyAgreesWithSubstitution(t *testing.T) {
	corpus := substitutiontest.Corpus()
	// Each string twice: in a step of spec.steps, then in a finally step.
	cases := 2 * len(corpus)
	type verdict struct {
		in       string
		field    string
		admitted bool   // by the API server
		refusal  string // the server's message when refused
		valid    bool   // by substitution.ValidateWorkflow
		problems string
		// The same workflow as a CronWorkflow's workflowSpec.
		cronAdmitted bool
		cronRefusal  string
	}
	verdicts := make([]verdict, cases)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range work {
				// What the server sees: JSON turns invalid UTF-8 into U+FFFD.
				s := jsonString(t, corpus[i%len(corpus)])
				wf, field := referencesWorkflow(i, s, i >= len(corpus))
				v := verdict{in: s, field: field}
				errs := substitution.ValidateWorkflow(&wf.Spec)
				v.valid = len(errs) == 0
				if !v.valid {
					v.problems = errs.ToAggregate().Error()
				}
				err := env.Client.Create(context.Background(), wf, client.DryRunAll)
				v.admitted = err == nil
				if err != nil {
					v.refusal = err.Error()
				}
				cw := MakeCronWorkflow(wf.Name, ns, "@daily").Spec(func(c *schedv1.CronWorkflowSpec) { c.WorkflowSpec = wf.Spec }).Obj()
				err = env.Client.Create(context.Background(), cw, client.DryRunAll)
				v.cronAdmitted = err == nil
				if err != nil {
					v.cronRefusal = err.Error()
				}
				verdicts[i] = v
			}
		})
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()

	var admitted, valid, disagree, validFinally int
	for i, v := range verdicts {
		if v.valid && i >= len(corpus) {
			validFinally++
		}
		if v.admitted {
			admitted++
		}
		if v.valid {
			valid++
		}
		switch {
		case !v.admitted && !strings.Contains(v.refusal, referencesPolicy):
			t.Errorf("%q in %s: refused by something other than the policy, so the case does not test it: %s", v.in, v.field, v.refusal)
		case v.admitted && !v.valid:
			disagree++
			t.Errorf("%q in %s: the API server admits it, api/substitution refuses it: %s", v.in, v.field, v.problems)
		case !v.admitted && v.valid:
			disagree++
			t.Errorf("%q in %s: api/substitution accepts it, the API server refuses it: %s", v.in, v.field, v.refusal)
		}
		switch {
		case v.cronAdmitted != v.admitted:
			t.Errorf("%q in %s: as a Workflow admitted %v, as a CronWorkflow's workflowSpec admitted %v: %s", v.in, v.field, v.admitted, v.cronAdmitted, v.cronRefusal)
		case !v.cronAdmitted && !strings.Contains(v.cronRefusal, referencesPolicy):
			t.Errorf("%q in %s: the CronWorkflow was refused by something other than the policy: %s", v.in, v.field, v.cronRefusal)
		case !v.cronAdmitted && !strings.Contains(v.cronRefusal, "spec.workflowSpec."+strings.SplitN(strings.TrimPrefix(v.field, "spec."), "[", 2)[0]):
			t.Errorf("%q in %s: the CronWorkflow's refusal does not name the field under spec.workflowSpec: %s", v.in, v.field, v.cronRefusal)
		}
	}
	t.Logf("%d cases: %d admitted by the API server, %d valid for api/substitution, %d disagreements", len(verdicts), admitted, valid, disagree)
	// The corpus must test both verdicts in numbers.
	if valid < 100 || len(verdicts)-valid < 100 {
		t.Errorf("%d of %d cases are valid; the corpus should hold at least 100 of each verdict", valid, len(verdicts))
	}
	if validFinally < 100 || len(corpus)-validFinally < 100 {
		t.Errorf("%d of %d cases in a finally step are valid; the corpus should hold at least 100 of each verdict there too", validFinally, len(corpus))
	}
}

// referencesWorkflow is a Workflow with params p, a, b and tag that holds
// s in step "use": in its args, command, an env value or its image, taking
// turns by i so each field the policy scans is tested. In spec.steps its
// steps are fetch, build, use and later; with finally, spec.steps is fetch
// and spec.finally build, use (depending on build, so that the steps
// before it are those it may use, as in a sequence) and later. It returns
// the field's path.
func referencesWorkflow(i int, s string, finally bool) (*schedv1.Workflow, string) {
	task := schedv1.AgentTaskSpec{Image: "busybox"}
	var field string
	switch i % 4 {
	case 0:
		task.Args, field = []string{"--in", s}, "args[1]"
	case 1:
		task.Command, field = []string{s}, "command[0]"
	case 2:
		task.Env, field = []schedv1.EnvVar{{Name: "IN", Value: s}}, "env[0].value"
	}
	if field == "" {
		if len(s) >= 1 && len(s) <= 512 {
			task.Image, field = s, "image"
		} else {
			task.Args, field = []string{s}, "args[0]"
		}
	}
	wf := MakeWorkflow(fmt.Sprintf("refs-%d", i), ns).
		Param("p", "v").Param("a", "1").Param("b", "2").Param("tag", "latest").
		Step("fetch", "busybox")
	if finally {
		wf.Finally("build", schedv1.AgentTaskSpec{Image: "busybox"}).
			Finally("use", task).DependsOn("build").
			Finally("later", schedv1.AgentTaskSpec{Image: "busybox"})
		return wf.Obj(), "spec.finally[1].task." + field
	}
	wf.Step("build", "busybox").StepTask("use", task).Step("later", "busybox")
	return wf.Obj(), "spec.steps[2].task." + field
}

// jsonString returns s as it arrives through JSON.
func jsonString(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Error(err)
		return s
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Error(err)
		return s
	}
	return out
}
