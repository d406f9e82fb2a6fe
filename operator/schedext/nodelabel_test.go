package schedext

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func loader(name, scheduler string, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedv1.LabelSchedExt: "s"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "scx-s", UID: "ds", Controller: ptr.To(true)}}}}
	if scheduler != "" {
		p.Labels[schedv1.LabelCPUScheduler] = scheduler
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestAttachedScheduler(t *testing.T) {
	terminating := loader("old", "scx_lavd", true)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	// A Ready pod with the labels that its DaemonSet does not control.
	stray := loader("stray", "scx_fake", true)
	stray.OwnerReferences = nil
	otherDS := loader("other", "scx_fake", true)
	otherDS.OwnerReferences[0].Name = "scx-other"
	cases := map[string]struct {
		pods []corev1.Pod
		want string
	}{
		"no pod":                 {nil, ""},
		"ready: its scheduler":   {[]corev1.Pod{loader("a", "scx_lavd", true)}, "scx_lavd"},
		"not ready: detached":    {[]corev1.Pod{loader("a", "scx_lavd", false)}, ""},
		"terminating: going":     {[]corev1.Pod{terminating}, ""},
		"ready but any accepted": {[]corev1.Pod{loader("a", "", true)}, ""},
		// A handover: the old pod is gone from the count, the new one says.
		"the ready one of two":           {[]corev1.Pod{terminating, loader("new", "scx_rusty", true)}, "scx_rusty"},
		"two ready that disagree":        {[]corev1.Pod{loader("a", "scx_lavd", true), loader("b", "scx_rusty", true)}, ""},
		"two ready that agree":           {[]corev1.Pod{loader("a", "scx_lavd", true), loader("b", "scx_lavd", true)}, "scx_lavd"},
		"a not-ready one is no say":      {[]corev1.Pod{loader("a", "scx_lavd", true), loader("b", "scx_rusty", false)}, "scx_lavd"},
		"only the DaemonSet's pods":      {[]corev1.Pod{stray, otherDS, loader("a", "scx_lavd", true)}, "scx_lavd"},
		"a stray pod alone says nothing": {[]corev1.Pod{stray}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := AttachedScheduler(tc.pods, "scx-s"); got != tc.want {
				t.Errorf("AttachedScheduler = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLabelPatch(t *testing.T) {
	cases := map[string]struct {
		value string
		want  map[string]any
	}{
		"set": {"scx_lavd", map[string]any{"metadata": map[string]any{"uid": "u1", "labels": map[string]any{schedv1.NodeLabelCPUScheduler: "scx_lavd"}}}},
		// null removes a key in a merge patch; no other label is named.
		"remove": {"", map[string]any{"metadata": map[string]any{"uid": "u1", "labels": map[string]any{schedv1.NodeLabelCPUScheduler: nil}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal(labelPatch("u1", tc.value), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
