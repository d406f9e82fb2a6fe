package agenttask

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// lines is n lines "line 1" to "line n", each with a newline.
func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// jsonSize is what JSON takes for s within its quotes.
func jsonSize(t *testing.T, s string) int {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(data) - 2
}

// TestTailOf: what a record keeps of a log as read, within the bounds of
// lines and of bytes as JSON stores them.
func TestTailOf(t *testing.T) {
	long := strings.Repeat("x", 1000) + "\n"
	cases := map[string]struct {
		raw          string
		longer, cut  bool
		want         string
		reason       schedv1.KeptLogReason
		messageHolds []string
	}{
		"empty":                   {raw: "", want: "", reason: schedv1.LogKept},
		"a short log, kept whole": {raw: "hello\nworld", want: "hello\nworld", reason: schedv1.LogKept},
		"exactly the lines":       {raw: lines(1, schedv1.KeptLogLines), want: lines(1, schedv1.KeptLogLines), reason: schedv1.LogKept},
		"one line more: the last 500": {raw: lines(1, schedv1.KeptLogLines+1), longer: true, want: lines(2, schedv1.KeptLogLines+1), reason: schedv1.LogTruncated,
			messageHolds: []string{"its last 500 line(s)", "at most 500 lines and 32 KiB"}},
		"long lines: within 32 KiB, whole lines": {raw: strings.Repeat(long, 100), want: strings.Repeat(long, 32), reason: schedv1.LogTruncated,
			messageHolds: []string{"its last 32 line(s), 32032 bytes"}},
		// Each line takes 999×6+2 bytes as JSON: 5 fit in 32 KiB.
		"escapes count as JSON stores them": {raw: strings.Repeat(strings.Repeat("\x01", 999)+"\n", 10), want: strings.Repeat(strings.Repeat("\x01", 999)+"\n", 5), reason: schedv1.LogTruncated},
		"one line past the bytes: its end":  {raw: strings.Repeat("y", 40000), want: strings.Repeat("y", schedv1.KeptLogBytes), reason: schedv1.LogTruncated},
		"not UTF-8: replaced":               {raw: "ok \xff\xfe\n", want: "ok \uFFFD\n", reason: schedv1.LogKept},
		"cut at the read limit": {raw: "abc\n", cut: true, want: "abc\n", reason: schedv1.LogTruncated,
			messageHolds: []string{"longer than the 256 KiB the operator reads at once"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, reason, msg := tailOf([]byte(tc.raw), tc.longer, tc.cut)
			if got != tc.want {
				t.Errorf("kept %d bytes %q..., want %d bytes %q...", len(got), clip(got, 40), len(tc.want), clip(tc.want, 40))
			}
			if reason != tc.reason {
				t.Errorf("reason %s, want %s (%s)", reason, tc.reason, msg)
			}
			if n := jsonSize(t, got); n > schedv1.KeptLogBytes {
				t.Errorf("kept %d bytes as JSON, more than %d", n, schedv1.KeptLogBytes)
			}
			if n := strings.Count(got, "\n"); n > schedv1.KeptLogLines {
				t.Errorf("kept %d lines, more than %d", n, schedv1.KeptLogLines)
			}
			for _, want := range tc.messageHolds {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if len(msg) > 1024 {
				t.Errorf("message of %d bytes, past the CRD's 1024", len(msg))
			}
		})
	}
}

// TestJSONLen: jsonLen is never less than what encoding/json writes, so
// the bounds hold in the object stored.
func TestJSONLen(t *testing.T) {
	for _, s := range []string{"", "plain", "\"quoted\"\\", "\n\r\t", "\x00\x1f\x7f", "<html>&", "\u2028\u2029", "é漢字😀", "\uFFFD"} {
		if got, want := jsonLen(s), jsonSize(t, s); got < want {
			t.Errorf("jsonLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
		if tail := jsonTail(s, 4); jsonLen(tail) > 4 || !strings.HasSuffix(s, tail) {
			t.Errorf("jsonTail(%q, 4) = %q", s, tail)
		}
	}
}

func rec(pod, log string) schedv1.KeptLog {
	reason := schedv1.LogKept
	if log == "" {
		reason = schedv1.LogUnavailable
	}
	return schedv1.KeptLog{Pod: pod, Reason: reason, Log: log}
}

func created(r schedv1.KeptLog, s int) schedv1.KeptLog {
	r.CreationTime = &metav1.Time{Time: time.Date(2026, 12, 7, 10, 0, s, 0, time.UTC)}
	return r
}

// TestKeepLogs: a task's kept logs stay within its budget, the oldest
// pods' given up first, and within the CRD's 32 records.
func TestKeepLogs(t *testing.T) {
	k := strings.Repeat("k", 1024)
	cases := map[string]struct {
		logs, add []schedv1.KeptLog
		budget    int
		want      []schedv1.KeptLog
	}{
		"within the budget: added": {
			logs: []schedv1.KeptLog{rec("a", "one\n")}, add: []schedv1.KeptLog{rec("b", "two\n")}, budget: 100,
			want: []schedv1.KeptLog{rec("a", "one\n"), rec("b", "two\n")},
		},
		"past it: the oldest given up": {
			logs: []schedv1.KeptLog{rec("a", k), rec("b", k)}, add: []schedv1.KeptLog{rec("c", k)}, budget: 2048,
			want: []schedv1.KeptLog{
				{Pod: "a", Reason: schedv1.LogDropped, Message: "given up to keep the task's kept logs within 2 KiB, for its later pods'"},
				rec("b", k), rec("c", k),
			},
		},
		"the latest alone past it: its end": {
			add: []schedv1.KeptLog{rec("a", k+"end")}, budget: 1024,
			want: []schedv1.KeptLog{{Pod: "a", Reason: schedv1.LogTruncated, Log: k[3:] + "end",
				Message: "the end of its log within the 1 KiB the task's other fields leave of an object's 1536 KiB"}},
		},
		"in the order the pods were created": {
			logs: []schedv1.KeptLog{created(rec("b", "two\n"), 20)}, add: []schedv1.KeptLog{created(rec("c", "three\n"), 30), created(rec("a", "one\n"), 10)}, budget: 100,
			want: []schedv1.KeptLog{created(rec("a", "one\n"), 10), created(rec("b", "two\n"), 20), created(rec("c", "three\n"), 30)},
		},
		"unavailable records cost nothing": {
			logs: []schedv1.KeptLog{rec("a", "")}, add: []schedv1.KeptLog{rec("b", k)}, budget: 1024,
			want: []schedv1.KeptLog{rec("a", ""), rec("b", k)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := keepLogs(tc.logs, tc.add, tc.budget)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("at most 32 records, the oldest dropped", func(t *testing.T) {
		var logs []schedv1.KeptLog
		for i := range 40 {
			logs = keepLogs(logs, []schedv1.KeptLog{rec(fmt.Sprintf("p%02d", i), "x")}, schedv1.KeptLogTaskBytes)
		}
		if len(logs) != maxKeptLogs || logs[0].Pod != "p08" || logs[31].Pod != "p39" {
			t.Errorf("%d records, from %s to %s; want 32, p08 to p39", len(logs), logs[0].Pod, logs[len(logs)-1].Pod)
		}
	})
}

// TestLogBudget: a task keeps KeptLogTaskBytes of logs unless its other
// fields leave less of the object.
func TestLogBudget(t *testing.T) {
	small := MakeAgentTask("t", "ns").Image("busybox").Obj()
	if got := logBudget(small); got != schedv1.KeptLogTaskBytes {
		t.Errorf("a small task's budget %d, want %d", got, schedv1.KeptLogTaskBytes)
	}
	large := small.DeepCopy()
	large.Spec.Args = []string{strings.Repeat("a", 1400<<10)}
	large.Status.Logs = []schedv1.KeptLog{rec("a", strings.Repeat("l", 100<<10))}
	got := logBudget(large)
	data, err := json.Marshal(large.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if got >= schedv1.KeptLogTaskBytes || got+len(data)+statusReserve > objectBytes {
		t.Errorf("a task of a %d-byte spec may keep %d bytes of logs: past the object's %d", len(data), got, objectBytes)
	}
}

// TestLogsDue: which pods' logs are read, and which pods may go as far
// as their logs are concerned.
func TestLogsDue(t *testing.T) {
	now := metav1.Now()
	ended := makePod("t-a", now).exited(1, "", now).obj()
	running := makePod("t-b", now).running(now).obj()
	pending := makePod("t-c", now).obj()
	kept := makePod("t-d", now).exited(0, "", now).obj()
	deleting := makePod("t-e", now).exited(0, "", now).deleted(now).obj()
	deleting.Finalizers = nil
	pods := []corev1.Pod{ended, running, pending, kept, deleting}
	task := MakeAgentTask("t", "ns").Image("busybox").Obj()
	task.Status.Logs = []schedv1.KeptLog{rec("t-d", "x")}
	podNames := func(pods []corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"t-a"}, podNames(logsDue(task, pods, false))); diff != "" {
		t.Errorf("due while the task runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t-a", "t-b"}, podNames(logsDue(task, pods, true))); diff != "" {
		t.Errorf("due once it is stopping (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t-c", "t-d"}, podNames(keptPods(task.Status.Logs, pods[:4]))); diff != "" {
		t.Errorf("may go (-want +got):\n%s", diff)
	}
}
