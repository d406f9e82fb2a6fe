package cachetrim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestTrimMetaKeepsACacheKeyWithinItsBound: the cache keeps a step task's
// cache key (label and annotation), but not an annotation of that name
// longer than any key, which a tenant may write on any task.
func TestTrimMetaKeepsACacheKeyWithinItsBound(t *testing.T) {
	key := strings.Repeat("k", schedv1.MaxCacheKeyLength)
	m := metav1.ObjectMeta{
		Labels:      map[string]string{schedv1.LabelCacheKey: schedv1.CacheKeyHash(key)},
		Annotations: map[string]string{schedv1.AnnotationCacheKey: key},
	}
	TrimMeta(&m)
	if m.Labels[schedv1.LabelCacheKey] != schedv1.CacheKeyHash(key) || m.Annotations[schedv1.AnnotationCacheKey] != key {
		t.Errorf("a key at its bound was not kept: %v %v", m.Labels, m.Annotations)
	}
	m.Annotations[schedv1.AnnotationCacheKey] = key + "k"
	TrimMeta(&m)
	if _, ok := m.Annotations[schedv1.AnnotationCacheKey]; ok {
		t.Errorf("an annotation longer than any cache key was kept (%d bytes)", len(m.Annotations[schedv1.AnnotationCacheKey]))
	}
}

// TestTrimMetaBoundsTheTimes: the times the operator writes are kept, a
// tenant's annotation of the same key past any time's length is not.
func TestTrimMetaBoundsTheTimes(t *testing.T) {
	for _, key := range []string{schedv1.AnnotationPreviousStepFinished, schedv1.AnnotationScheduledTime} {
		at := time.Date(2026, 12, 7, 23, 59, 59, 999999999, time.FixedZone("", -12*3600)).Format(time.RFC3339Nano)
		m := metav1.ObjectMeta{Annotations: map[string]string{key: at}}
		TrimMeta(&m)
		if m.Annotations[key] != at {
			t.Errorf("%s %q was not kept: %v", key, at, m.Annotations)
		}
		m.Annotations[key] = strings.Repeat("9", maxTimeLength+1)
		TrimMeta(&m)
		if v, ok := m.Annotations[key]; ok {
			t.Errorf("%s of %d bytes was kept", key, len(v))
		}
	}
}

// TestHeldOutputs: the keys and sizes of the file outputs the cache drops
// read back as written, the most a task may have fit the annotation's
// bound, and a longer one (a tenant's) is not kept.
func TestHeldOutputs(t *testing.T) {
	outs := map[string]string{}
	want := map[string]int{}
	for i := range schedv1.MaxFileOutputs {
		k := fmt.Sprintf("%02d", i) + strings.Repeat("k", 61)
		outs[k] = strings.Repeat("x", schedv1.MaxFileOutputBytes/schedv1.MaxFileOutputs)
		want[k] = schedv1.MaxFileOutputBytes / schedv1.MaxFileOutputs
	}
	outs["big"] = strings.Repeat("x", 1234567)
	delete(outs, fmt.Sprintf("%02d", 0)+strings.Repeat("k", 61))
	delete(want, fmt.Sprintf("%02d", 0)+strings.Repeat("k", 61))
	want["big"] = 1234567
	m := metav1.ObjectMeta{}
	MarkHeldOutputs(&m, outs)
	TrimMeta(&m)
	if diff := cmp.Diff(want, HeldOutputs(&m)); diff != "" {
		t.Errorf("held outputs (-want +got):\n%s", diff)
	}
	if got := HeldOutputs(&metav1.ObjectMeta{}); got != nil {
		t.Errorf("a task without the annotation holds %v", got)
	}
	m.Annotations[AnnotationHeldOutputs] += "," + strings.Repeat("k", maxHeldOutputsLength)
	TrimMeta(&m)
	if got := HeldOutputs(&m); got != nil {
		t.Errorf("an annotation past its bound was kept: %d keys", len(got))
	}
}
