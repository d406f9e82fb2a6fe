package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

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
// substitutiontest.Corpus into a step of a Workflow, again into a finally
// step, into a forEach step (whose task may use ${item}), as the
// forEach.from of a step or finally step and as the cache.key of one, and requires the API
// server (CRD rules and the policy) and substitution.ValidateWorkflow,
// which the plugin and the operator run, to give the same verdict: a
// Workflow the server admits must be one the operator runs, and one the
// plugin refuses must not be admitted by `kubectl apply`. api/substitution
// is the reference: when they disagree, the policy is what to fix. The same
// workflow as a CronWorkflow's workflowSpec gets the same verdict, its
// refusal naming spec.workflowSpec.
func TestWorkflowReferencesPolicyAgreesWithSubstitution(t *testing.T) {
	corpus := substitutiontest.Corpus()
	// Each string five times: in a step of spec.steps, in a finally step,
	// in a forEach step, as a forEach.from, as a cache.key.
	cases := int(placements) * len(corpus)
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
				wf, field := referencesWorkflow(i, s, placement(i/len(corpus)))
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

	var admitted, valid, disagree int
	validIn := map[placement]int{}
	for i, v := range verdicts {
		if v.valid {
			validIn[placement(i/len(corpus))]++
		}
		if v.admitted {
			admitted++
		}
		if v.valid {
			valid++
		}
		// As a forEach.from, the CRD's bounds on it (at least 1 and at most
		// 256 characters) refuse some strings before the policy sees them,
		// none of which is one reference.
		byCRD := strings.HasSuffix(v.field, "forEach.from") && (v.in == "" || utf8.RuneCountInString(v.in) > 256) ||
			strings.HasSuffix(v.field, "cache.key") && (v.in == "" || utf8.RuneCountInString(v.in) > schedv1.MaxCacheKeyLength)
		switch {
		case !v.admitted && !strings.Contains(v.refusal, referencesPolicy) && !byCRD:
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
		case byCRD:
		case !v.cronAdmitted && !strings.Contains(v.cronRefusal, referencesPolicy):
			t.Errorf("%q in %s: the CronWorkflow was refused by something other than the policy: %s", v.in, v.field, v.cronRefusal)
		case !v.cronAdmitted && !strings.Contains(v.cronRefusal, "spec.workflowSpec."+strings.SplitN(strings.TrimPrefix(v.field, "spec."), "[", 2)[0]):
			t.Errorf("%q in %s: the CronWorkflow's refusal does not name the field under spec.workflowSpec: %s", v.in, v.field, v.cronRefusal)
		}
	}
	t.Logf("%d cases: %d admitted by the API server, %d valid for api/substitution (%d in a step, %d in a finally step, %d in a forEach step, %d as a forEach.from, %d as a cache.key), %d disagreements",
		len(verdicts), admitted, valid, validIn[inStep], validIn[inFinally], validIn[inForEach], validIn[asFrom], validIn[asCacheKey], disagree)
	// The corpus must test both verdicts in numbers.
	if valid < 100 || len(verdicts)-valid < 100 {
		t.Errorf("%d of %d cases are valid; the corpus should hold at least 100 of each verdict", valid, len(verdicts))
	}
	for p := range placements {
		// As a forEach.from only a whole reference is valid: fewer.
		least := 100
		if p == asFrom {
			least = 20
		}
		if validIn[p] < least || len(corpus)-validIn[p] < 100 {
			t.Errorf("%d of %d cases %s are valid; the corpus should hold at least %d valid and 100 invalid ones there", validIn[p], len(corpus), p, least)
		}
	}
}

// placement is where referencesWorkflow puts a string of the corpus.
type placement int

const (
	inStep placement = iota
	inFinally
	inForEach
	asFrom
	asCacheKey
	placements
)

func (p placement) String() string {
	return [...]string{"in a step", "in a finally step", "in a forEach step", "as a forEach.from", "as a cache.key"}[p]
}

// referencesWorkflow is a Workflow with params p, a, b and tag that holds
// s in step "use": in its args, command, an env value or its image, taking
// turns by i so each field the policy scans is tested, or (asFrom) as its
// forEach.from, or (asCacheKey) as its cache.key. In spec.steps its steps
// are fetch, build, use and later; in a finally step (inFinally, and
// asFrom and asCacheKey for odd i), spec.steps is fetch
// and spec.finally build, use (depending on build, so that the steps
// before it are those it may use, as in a sequence) and later. inForEach
// and asFrom make "use" a forEach step. It returns the field's path.
func referencesWorkflow(i int, s string, where placement) (*schedv1.Workflow, string) {
	task := schedv1.AgentTaskSpec{Image: "busybox"}
	var field string
	finally := where == inFinally || (where == asFrom || where == asCacheKey) && i%2 == 1
	forEach := &schedv1.ForEach{Items: []string{"eu", "us"}}
	var cache *schedv1.StepCache
	switch where {
	case inStep, inFinally:
		forEach = nil
	case asCacheKey:
		forEach, field, cache = nil, "cache.key", &schedv1.StepCache{Key: s}
	case asFrom:
		forEach = &schedv1.ForEach{From: s}
		task.Args, field = []string{"${item}"}, "forEach.from"
	}
	switch {
	case where == asFrom, where == asCacheKey:
	case i%4 == 0:
		task.Args, field = []string{"--in", s}, "task.args[1]"
	case i%4 == 1:
		task.Command, field = []string{s}, "task.command[0]"
	case i%4 == 2:
		task.Env, field = []schedv1.EnvVar{{Name: "IN", Value: s}}, "task.env[0].value"
	case len(s) >= 1 && len(s) <= 512:
		task.Image, field = s, "task.image"
	default:
		task.Args, field = []string{s}, "task.args[0]"
	}
	wf := MakeWorkflow(fmt.Sprintf("refs-%d-%d", where, i), ns).
		Param("p", "v").Param("a", "1").Param("b", "2").Param("tag", "latest").
		Step("fetch", "busybox")
	if finally {
		wf.Finally("build", schedv1.AgentTaskSpec{Image: "busybox"}).
			Finally("use", task).DependsOn("build")
		wf.Spec(func(ws *schedv1.WorkflowSpec) { ws.Finally[1].ForEach, ws.Finally[1].Cache = forEach, cache })
		wf.Finally("later", schedv1.AgentTaskSpec{Image: "busybox"})
		return wf.Obj(), "spec.finally[1]." + field
	}
	wf.Step("build", "busybox").StepTask("use", task)
	wf.Spec(func(ws *schedv1.WorkflowSpec) { ws.Steps[2].ForEach, ws.Steps[2].Cache = forEach, cache })
	wf.Step("later", "busybox")
	return wf.Obj(), "spec.steps[2]." + field
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
