package expiry_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
)

var (
	done = metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	free = &tiers.TTL{Tier: "free", Default: 15 * time.Minute, Max: 24 * time.Hour}
	week = 7 * 24 * time.Hour
)

func exp(ttl time.Duration, src schedv1.ExpirySource, tier string, finished bool) *schedv1.Expiry {
	e := &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: ttl}, Source: src, Tier: tier}
	if finished {
		e.DeleteTime = ptr.To(metav1.NewTime(done.Add(ttl)))
	}
	return e
}

func TestForTask(t *testing.T) {
	task := func(ttl time.Duration, cleanup schedv1.CleanupPolicy) *schedv1.AgentTask {
		t := MakeAgentTask("t", "ns").Image("x").Obj()
		if ttl >= 0 {
			t.Spec.TTLAfterFinished = &metav1.Duration{Duration: ttl}
		}
		t.Spec.Cleanup = cleanup
		return t
	}
	step := task(-1, "")
	step.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: "w", UID: "u", Controller: ptr.To(true)}}
	cases := map[string]struct {
		task     *schedv1.AgentTask
		tier     *tiers.TTL
		def      time.Duration
		finished bool
		want     *schedv1.Expiry
	}{
		"no tier, no TTL: kept":                {task: task(-1, "")},
		"no tier, cleanup Job: the task stays": {task: task(time.Hour, schedv1.CleanupJob)},
		"no tier, cleanup Task":                {task: task(time.Hour, schedv1.CleanupTask), finished: true, want: exp(time.Hour, schedv1.ExpiryFromSpec, "", true)},
		"tier default":                         {task: task(-1, ""), tier: free, want: exp(15*time.Minute, schedv1.ExpiryFromTierDefault, "free", false)},
		"tier default, finished":               {task: task(-1, ""), tier: free, finished: true, want: exp(15*time.Minute, schedv1.ExpiryFromTierDefault, "free", true)},
		"spec wins within the maximum":         {task: task(2*time.Hour, schedv1.CleanupTask), tier: free, finished: true, want: exp(2*time.Hour, schedv1.ExpiryFromSpec, "", true)},
		"spec beyond the maximum is capped":    {task: task(48*time.Hour, schedv1.CleanupTask), tier: free, want: exp(24*time.Hour, schedv1.ExpiryFromTierMaximum, "free", false)},
		"cleanup Job: the tier's maximum keeps the record": {task: task(time.Minute, ""), tier: free, finished: true,
			want: exp(24*time.Hour, schedv1.ExpiryFromTierMaximum, "free", true)},
		"cleanup Job, tier without maximum":    {task: task(time.Minute, ""), tier: &tiers.TTL{Tier: "t", Default: time.Minute}},
		"tier without default":                 {task: task(-1, ""), tier: &tiers.TTL{Tier: "t", Max: time.Hour}},
		"a step task goes with its workflow":   {task: step, tier: free, finished: true},
		"zero TTL in the spec deletes at once": {task: task(0, schedv1.CleanupTask), tier: free, finished: true, want: exp(0, schedv1.ExpiryFromSpec, "", true)},
		"install default, no tier":             {task: task(-1, ""), def: week, finished: true, want: exp(week, schedv1.ExpiryFromInstallDefault, "", true)},
		"install default, tier without default": {task: task(-1, ""), tier: &tiers.TTL{Tier: "t"}, def: week,
			want: exp(week, schedv1.ExpiryFromInstallDefault, "", false)},
		"the tier's default wins over the install's": {task: task(-1, ""), tier: free, def: week, want: exp(15*time.Minute, schedv1.ExpiryFromTierDefault, "free", false)},
		"install default above the tier's maximum": {task: task(-1, ""), tier: &tiers.TTL{Tier: "t", Max: time.Hour}, def: week, finished: true,
			want: exp(time.Hour, schedv1.ExpiryFromTierMaximum, "t", true)},
		"the spec wins over the install default": {task: task(time.Hour, schedv1.CleanupTask), def: week, finished: true, want: exp(time.Hour, schedv1.ExpiryFromSpec, "", true)},
		"cleanup Job: the install default keeps the record": {task: task(time.Hour, schedv1.CleanupJob), def: week, finished: true,
			want: exp(week, schedv1.ExpiryFromInstallDefault, "", true)},
		"cleanup Job: the record outlives its Job": {task: task(10*24*time.Hour, schedv1.CleanupJob), def: week, finished: true,
			want: exp(10*24*time.Hour, schedv1.ExpiryFromInstallDefault, "", true)},
		"cleanup Job: the tier's maximum before the install's default": {task: task(time.Minute, ""), tier: free, def: week,
			want: exp(24*time.Hour, schedv1.ExpiryFromTierMaximum, "free", false)},
		"a step task goes with its workflow, whatever the install says": {task: step, def: week, finished: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var completion *metav1.Time
			if tc.finished {
				completion = &done
			}
			if diff := cmp.Diff(tc.want, expiry.ForTask(tc.task, completion, expiry.Rules{Tier: tc.tier, Default: tc.def})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestForWorkflow(t *testing.T) {
	wf := func(ttl time.Duration) *schedv1.Workflow {
		w := MakeWorkflow("w", "ns").Step("a", "x").Obj()
		if ttl >= 0 {
			w.Spec.TTLAfterFinished = &metav1.Duration{Duration: ttl}
		}
		return w
	}
	cases := map[string]struct {
		wf       *schedv1.Workflow
		tier     *tiers.TTL
		def      time.Duration
		finished bool
		want     *schedv1.Expiry
	}{
		"no tier, no TTL: kept":       {wf: wf(-1), finished: true},
		"no tier, spec":               {wf: wf(time.Hour), finished: true, want: exp(time.Hour, schedv1.ExpiryFromSpec, "", true)},
		"tier default":                {wf: wf(-1), tier: free, finished: true, want: exp(15*time.Minute, schedv1.ExpiryFromTierDefault, "free", true)},
		"spec wins within the max":    {wf: wf(time.Minute), tier: free, want: exp(time.Minute, schedv1.ExpiryFromSpec, "", false)},
		"spec beyond the max, capped": {wf: wf(100 * time.Hour), tier: free, finished: true, want: exp(24*time.Hour, schedv1.ExpiryFromTierMaximum, "free", true)},
		"tier without TTLs":           {wf: wf(-1), tier: &tiers.TTL{Tier: "t"}},
		"install default":             {wf: wf(-1), def: week, finished: true, want: exp(week, schedv1.ExpiryFromInstallDefault, "", true)},
		"install default, tier without TTLs": {wf: wf(-1), tier: &tiers.TTL{Tier: "t"}, def: week,
			want: exp(week, schedv1.ExpiryFromInstallDefault, "", false)},
		"tier default over the install's": {wf: wf(-1), tier: free, def: week, finished: true, want: exp(15*time.Minute, schedv1.ExpiryFromTierDefault, "free", true)},
		"spec over the install default":   {wf: wf(time.Hour), def: week, want: exp(time.Hour, schedv1.ExpiryFromSpec, "", false)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var completion *metav1.Time
			if tc.finished {
				completion = &done
			}
			if diff := cmp.Diff(tc.want, expiry.ForWorkflow(tc.wf, completion, expiry.Rules{Tier: tc.tier, Default: tc.def})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
