package workflow

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// cached is a step task of another workflow that ran with key, in phase,
// finished at done.
func cached(name, key string, phase schedv1.AgentTaskPhase, done time.Time, outputs map[string]string) *schedv1.AgentTask {
	t := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns",
		Labels:      map[string]string{schedv1.LabelCacheKey: schedv1.CacheKeyHash(key)},
		Annotations: map[string]string{schedv1.AnnotationCacheKey: key},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: strings.Split(name, "-")[0], Controller: new(true),
		}},
	}}
	t.Status.Phase, t.Status.Outputs = phase, outputs
	if !done.IsZero() {
		d := metav1.NewTime(done)
		t.Status.CompletionTime = &d
	}
	return t
}

func TestCacheHit(t *testing.T) {
	const key = "build:abc123"
	hour := metav1.Duration{Duration: time.Hour}
	collided := cached("old-0-build", "build:other", schedv1.TaskSucceeded, now.Add(-time.Minute), nil)
	collided.Labels[schedv1.LabelCacheKey] = schedv1.CacheKeyHash(key)
	deleting := cached("gone-0-build", key, schedv1.TaskSucceeded, now.Add(-time.Minute), nil)
	deleting.DeletionTimestamp = &now
	cases := map[string]struct {
		found  []*schedv1.AgentTask
		maxAge *metav1.Duration
		want   string // the task's name, "" for a miss
	}{
		"nothing found": {},
		"a task that succeeded with the key": {
			found: []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskSucceeded, now.Add(-time.Minute), nil)},
			want:  "old-0-build",
		},
		"within maxAge": {
			found:  []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskSucceeded, now.Add(-59*time.Minute), nil)},
			maxAge: &hour,
			want:   "old-0-build",
		},
		"older than maxAge": {
			found:  []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskSucceeded, now.Add(-61*time.Minute), nil)},
			maxAge: &hour,
		},
		"no maxAge takes any age": {
			found: []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskSucceeded, now.Add(-1000*time.Hour), nil)},
			want:  "old-0-build",
		},
		"failed": {
			found: []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskFailed, now.Add(-time.Minute), nil)},
		},
		"still running": {
			found: []*schedv1.AgentTask{cached("old-0-build", key, schedv1.TaskRunning, time.Time{}, nil)},
		},
		"same hash, another key (a collision)": {
			found: []*schedv1.AgentTask{collided},
		},
		"being deleted": {
			found: []*schedv1.AgentTask{deleting},
		},
		"the latest of several, whatever the order": {
			found: []*schedv1.AgentTask{
				cached("a-0-build", key, schedv1.TaskSucceeded, now.Add(-3*time.Minute), nil),
				cached("c-0-build", key, schedv1.TaskSucceeded, now.Add(-time.Minute), nil),
				cached("b-0-build", key, schedv1.TaskSucceeded, now.Add(-2*time.Minute), nil),
			},
			want: "c-0-build",
		},
		"a tie goes to the later name": {
			found: []*schedv1.AgentTask{
				cached("b-0-build", key, schedv1.TaskSucceeded, now.Add(-time.Minute), nil),
				cached("a-0-build", key, schedv1.TaskSucceeded, now.Add(-time.Minute), nil),
			},
			want: "b-0-build",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if hit := cacheHit(tc.found, key, tc.maxAge, now.Time); hit != nil {
				got = hit.Name
			}
			if got != tc.want {
				t.Errorf("hit %q, want %q", got, tc.want)
			}
		})
	}
}

// cachedBuild builds with a key from a param and reports with a key from
// build's output.
func cachedBuild() *schedv1.Workflow {
	wf := MakeWorkflow("rel", "ns").Param("commit", "abc123").
		Step("build", "builder:1", "--commit=${params.commit}").
		Step("report", "busybox", "${steps.build.output.image}").Obj()
	wf.Spec.Steps[0].Cache = &schedv1.StepCache{Key: "build:${params.commit}"}
	wf.Spec.Steps[1].Cache = &schedv1.StepCache{Key: "report:${steps.build.output.image}"}
	return wf
}

// lookups is a cacheLookup over tasks that records the hashes asked for.
type lookups struct {
	tasks []*schedv1.AgentTask
	asked []string
}

func (l *lookups) lookup(hash string) []*schedv1.AgentTask {
	l.asked = append(l.asked, hash)
	var out []*schedv1.AgentTask
	for _, t := range l.tasks {
		if t.Labels[schedv1.LabelCacheKey] == hash {
			out = append(out, t)
		}
	}
	return out
}

func TestDecideCache(t *testing.T) {
	hit := cached("old-0-build", "build:abc123", schedv1.TaskSucceeded, now.Add(-time.Minute), map[string]string{"image": "reg/app@sha256:1"})
	cases := map[string]struct {
		wf    *schedv1.Workflow
		found []*schedv1.AgentTask
		want  summary
		asked []string // the keys looked up
		check func(t *testing.T, p plan)
	}{
		"a miss creates the task with its key": {
			wf:    cachedBuild(),
			asked: []string{"build:abc123"},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/2",
				Steps: []string{"build=Pending", "report=Waiting"}, Create: "rel-0-build"},
			check: func(t *testing.T, p plan) {
				task := created(p)
				if task.Labels[schedv1.LabelCacheKey] != schedv1.CacheKeyHash("build:abc123") || task.Annotations[schedv1.AnnotationCacheKey] != "build:abc123" {
					t.Errorf("the task does not record its key: labels %v, annotations %v", task.Labels, task.Annotations)
				}
			},
		},
		"a hit takes the outputs, creates nothing for the step, and the next step uses them": {
			wf:    cachedBuild(),
			found: []*schedv1.AgentTask{hit},
			asked: []string{"build:abc123", "report:reg/app@sha256:1"},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/2",
				Steps: []string{"build=Succeeded", "report=Pending"}, Create: "rel-1-report"},
			check: func(t *testing.T, p plan) {
				s := p.status.Steps[0]
				want := schedv1.StepStatus{
					Name: "build", Phase: schedv1.StepSucceeded, Reason: schedv1.ReasonCacheHit,
					Outputs: map[string]string{"image": "reg/app@sha256:1"}, StartTime: &now, CompletionTime: &now,
					CachedFrom: &schedv1.CachedFrom{Task: "old-0-build", Workflow: "old", CompletionTime: hit.Status.CompletionTime},
					Message:    "cache hit: took the outputs of AgentTask old-0-build of workflow old, which succeeded 1m0s ago with the same cache key; ran nothing ('workflow run --no-cache' runs every step)",
				}
				if diff := cmp.Diff(want, s); diff != "" {
					t.Errorf("step (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"reg/app@sha256:1"}, created(p).Spec.Args); diff != "" {
					t.Errorf("report's args (-want +got):\n%s", diff)
				}
			},
		},
		"every step a hit: the workflow succeeds without a task": {
			wf: cachedBuild(),
			found: []*schedv1.AgentTask{hit,
				cached("old-1-report", "report:reg/app@sha256:1", schedv1.TaskSucceeded, now.Add(-time.Minute), map[string]string{"url": "u"})},
			asked: []string{"build:abc123", "report:reg/app@sha256:1"},
			want: summary{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Progress: "2/2",
				Steps: []string{"build=Succeeded", "report=Succeeded"}},
		},
		"spec.noCache looks nothing up, and the task still records its key": {
			wf:    func() *schedv1.Workflow { wf := cachedBuild(); wf.Spec.NoCache = true; return wf }(),
			found: []*schedv1.AgentTask{hit},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/2",
				Steps: []string{"build=Pending", "report=Waiting"}, Create: "rel-0-build"},
			check: func(t *testing.T, p plan) {
				if created(p).Annotations[schedv1.AnnotationCacheKey] != "build:abc123" {
					t.Errorf("annotations %v", created(p).Annotations)
				}
			},
		},
		"a retry's fromStep runs again, taking no cached result": {
			wf: func() *schedv1.Workflow {
				wf := cachedBuild()
				wf.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "old", FromStep: "build"}
				return wf
			}(),
			found: []*schedv1.AgentTask{hit},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/2",
				Steps: []string{"build=Pending", "report=Waiting"}, Create: "rel-0-build"},
		},
		"a step without a cache looks nothing up": {
			wf:    threeSteps().Obj(),
			found: []*schedv1.AgentTask{hit},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/3",
				Steps: []string{"fetch=Pending", "build=Waiting", "report=Waiting"}, Create: "rel-0-fetch"},
			check: func(t *testing.T, p plan) {
				if _, ok := created(p).Labels[schedv1.LabelCacheKey]; ok {
					t.Errorf("a step without a cache got a key: %v", created(p).Labels)
				}
			},
		},
		"a key that resolves past its bound fails the step": {
			wf: cachedBuild(),
			found: []*schedv1.AgentTask{cached("old-0-build", "build:abc123", schedv1.TaskSucceeded, now.Add(-time.Minute),
				map[string]string{"image": strings.Repeat("x", 1020)})},
			asked: []string{"build:abc123"},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonTooLarge, Progress: "1/2",
				Steps: []string{"build=Succeeded", "report=Failed"}},
			check: func(t *testing.T, p plan) {
				contains(t, "message", p.status.Steps[1].Message, "cache.key resolves to 1027 bytes", "more than the 1024")
			},
		},
		"a key over its bound with params alone is refused before anything runs": {
			wf: func() *schedv1.Workflow {
				wf := cachedBuild()
				wf.Spec.Params[0].Value = strings.Repeat("x", 1020)
				return wf
			}(),
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/2",
				Steps: []string{"build=Skipped", "report=Skipped"}},
			check: func(t *testing.T, p plan) {
				contains(t, "message", p.status.Message, "spec.steps[0].cache.key", "cache.key resolves to 1026 bytes with its params alone")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := &lookups{tasks: tc.found}
			p := decideCached(tc.wf, nil, nil, nil, approvalRules{}, l.lookup, now)
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			var want []string
			for _, k := range tc.asked {
				want = append(want, schedv1.CacheKeyHash(k))
			}
			if diff := cmp.Diff(want, l.asked); diff != "" {
				t.Errorf("lookups (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// A restart between the miss and the status write: the step's own task,
// found by its name, is the step's; nothing is looked up again, even if a
// hit has appeared since. And a hit, once recorded, is not looked up again.
func TestDecideCacheAfterRestart(t *testing.T) {
	wf := cachedBuild()
	own, err := stepTaskFor(wf, 0)
	if err != nil {
		t.Fatal(err)
	}
	own.Status.Phase = schedv1.TaskRunning
	l := &lookups{tasks: []*schedv1.AgentTask{cached("old-0-build", "build:abc123", schedv1.TaskSucceeded, now.Add(-time.Minute), nil)}}
	p := decideCached(wf, map[int]*schedv1.AgentTask{0: own}, nil, nil, approvalRules{}, l.lookup, now)
	if got := summarize(p); got.Create != "" || p.status.Steps[0].Phase != schedv1.StepRunning || p.status.Steps[0].CachedFrom != nil {
		t.Errorf("the step with a task of its own: %+v, step %+v", got, p.status.Steps[0])
	}
	if len(l.asked) != 0 {
		t.Errorf("looked up %v for a step that has its task", l.asked)
	}

	wf = cachedBuild()
	wf.Spec.Steps = wf.Spec.Steps[:1]
	p = decideCached(wf, nil, nil, nil, approvalRules{}, l.lookup, now)
	wf.Status = p.status
	l.asked = nil
	l.tasks = nil // the task the hit came from is gone since
	p = decideCached(wf, nil, nil, nil, approvalRules{}, l.lookup, metav1.NewTime(now.Add(time.Minute)))
	if len(l.asked) != 0 || len(p.creates) != 0 || p.status.Steps[0].Reason != schedv1.ReasonCacheHit || p.status.Phase != schedv1.WorkflowSucceeded {
		t.Errorf("a recorded hit changed: asked %v, creates %d, step %+v", l.asked, len(p.creates), p.status.Steps[0])
	}
}
