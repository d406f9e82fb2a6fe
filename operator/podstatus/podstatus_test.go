package podstatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestCause(t *testing.T) {
	waiting := func(reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", Image: "app:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	cases := map[string]struct {
		restartPolicy corev1.RestartPolicy
		status        corev1.PodStatus
		reason        string
		msgContain    string
	}{
		"starting": {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating", "")}}},
		"running":  {status: corev1.PodStatus{Phase: corev1.PodRunning}},
		"unschedulable wins over a waiting container": {
			status: corev1.PodStatus{
				Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/6 nodes are available"}},
				ContainerStatuses: []corev1.ContainerStatus{waiting("ErrImagePull", "")},
			},
			reason: schedv1.ReasonUnschedulable, msgContain: "0/6 nodes are available",
		},
		"pull back-off":      {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff", "Back-off pulling")}}, reason: schedv1.ReasonImagePull, msgContain: "app:1: ImagePullBackOff"},
		"invalid image name": {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("InvalidImageName", "")}}, reason: schedv1.ReasonImagePull},
		"init container":     {status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{waiting("ErrImagePull", "")}}, reason: schedv1.ReasonImagePull},
		"missing secret": {
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CreateContainerConfigError", `secret "db" not found`)}},
			reason: schedv1.ReasonMissingRef, msgContain: `secret "db" not found`,
		},
		"crash loop": {
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
				cs := waiting("CrashLoopBackOff", "back-off")
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137}
				return cs
			}()}},
			reason: schedv1.ReasonCrashLoop, msgContain: "(3 restarts), last exit code 137",
		},
		// The real kubelet keeps the terminated state through the back-off.
		"crash loop seen as a restarted container that ended": {
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "worker", RestartCount: 2,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "cannot open /data/db\n"}},
			}}},
			reason: schedv1.ReasonCrashLoop, msgContain: "container worker keeps crashing (2 restarts), last exit code 2: cannot open /data/db",
		},
		"a Job's pod that failed is not a loop": {
			restartPolicy: corev1.RestartPolicyNever,
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "task", RestartCount: 1, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}},
			}}},
		},
		"an ended container before any restart is not a loop yet": {
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "worker", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}},
			}}},
		},
		"an ended init container is normal": {
			status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 1, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}},
				ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			},
		},
		"run error": {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("RunContainerError", "exec format error")}}, reason: schedv1.ReasonCreateFailed, msgContain: "exec format error"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, msg := Cause(&corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.restartPolicy}, Status: tc.status})
			if reason != tc.reason || !strings.Contains(msg, tc.msgContain) || (reason == "") != (msg == "") {
				t.Errorf("Cause = %q, %q; want %q containing %q", reason, msg, tc.reason, tc.msgContain)
			}
		})
	}
}

// TestTransient: which causes an app waits out until its progress deadline,
// and which need someone to act at once.
func TestTransient(t *testing.T) {
	cases := map[string]bool{
		// No node can run the pod yet: no room, a claim binding, a node an
		// autoscaler adds, a surge pod waiting for the old one to go.
		schedv1.ReasonUnschedulable: true,
		// Images pulled, volumes mounted, init containers running.
		schedv1.ReasonContainersStarting: true,

		schedv1.ReasonImagePull:                  false, // an image that cannot be pulled or does not exist
		schedv1.ReasonCrashLoop:                  false,
		schedv1.ReasonMissingRef:                 false, // a missing Secret or ConfigMap
		schedv1.ReasonCreateFailed:               false, // the runtime refuses the container; pods cannot be created
		schedv1.ReasonForbidden:                  false, // a quota's or admission's refusal
		schedv1.ReasonQuotaExceeded:              false,
		schedv1.ReasonInvalidSpec:                false,
		schedv1.ReasonPrivilegedNotAllowed:       false,
		schedv1.ReasonExternalSecretsUnavailable: false,
		schedv1.ReasonHostConflict:               false,
		schedv1.ReasonProgressDeadline:           false,
		"":                                       false,
	}
	for reason, want := range cases {
		if got := Transient(reason); got != want {
			t.Errorf("Transient(%q) = %v, want %v", reason, got, want)
		}
	}
	// Every cause Cause and Starting find is classified by the table above.
	for _, status := range []corev1.PodStatus{
		{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}},
		{ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}},
		{ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError"}}}}},
	} {
		reason, _ := Cause(&corev1.Pod{Status: status})
		if _, ok := cases[reason]; !ok || reason == "" {
			t.Errorf("Cause gave %q, which the table does not classify", reason)
		}
	}
}

func TestStarting(t *testing.T) {
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	cases := map[string]struct {
		status corev1.PodStatus
		msg    string
	}{
		"not scheduled yet":    {},
		"containers created":   {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: waiting("ContainerCreating")}}}, msg: "container web is starting (ContainerCreating)"},
		"initialising":         {status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: waiting("PodInitializing")}}}, msg: "container init is starting (PodInitializing)"},
		"running":              {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
		"a problem is Cause's": {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: waiting("ImagePullBackOff")}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, msg := Starting(&corev1.Pod{Status: tc.status})
			if msg != tc.msg || (reason == schedv1.ReasonContainersStarting) != (tc.msg != "") {
				t.Errorf("Starting = %q, %q; want message %q", reason, msg, tc.msg)
			}
		})
	}
}

// TestCrashShowsTheLogsEnd: a container that wrote no termination message
// has its log's end there (FallbackToLogsOnError); the status keeps the end,
// as valid UTF-8, bounded.
func TestCrashShowsTheLogsEnd(t *testing.T) {
	log := strings.Repeat("starting up\n", 200) + "panic: cannot open /data/db \xff\n"
	reason, msg := Cause(&corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "api", RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: log}},
	}}}})
	if reason != schedv1.ReasonCrashLoop || !strings.HasSuffix(msg, "panic: cannot open /data/db \uFFFD") {
		t.Errorf("Cause = %q, %q; want the log's last line", reason, msg)
	}
	if !utf8.ValidString(msg) || len(msg) > 100+MaxMessage {
		t.Errorf("message of %d bytes, valid UTF-8 %v", len(msg), utf8.ValidString(msg))
	}
}

func TestClipMessageTailKeepsTheEnd(t *testing.T) {
	s := "first " + strings.Repeat("é", MaxMessage) + " last"
	got := ClipMessageTail(s)
	if !utf8.ValidString(got) || len(got) > MaxMessage+len("…") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, " last") {
		t.Errorf("ClipMessageTail gave %d bytes %q…, valid UTF-8 %v", len(got), got[:16], utf8.ValidString(got))
	}
	if ClipMessageTail("short") != "short" {
		t.Errorf("ClipMessageTail changed a short message")
	}
}

// TestClipMessageReplacesBytesAsJSONDoes: a message read back from the API server
// equals the one computed, so an unchanged status is not written again.
func TestClipMessageReplacesBytesAsJSONDoes(t *testing.T) {
	for _, s := range []string{"ok \xff\xfe end", "cut \xe2\x82", "fine"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		if ClipMessage(s) != back || ClipMessageTail(s) != back {
			t.Errorf("ClipMessage(%q) = %q, ClipMessageTail %q; the API server keeps %q", s, ClipMessage(s), ClipMessageTail(s), back)
		}
	}
}

func TestClipMessageKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", MaxMessage) // two bytes each
	got := ClipMessage(s)
	if !utf8.ValidString(got) || len(got) > MaxMessage+len("…") {
		t.Errorf("ClipMessage gave %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
	if ClipMessage("short") != "short" {
		t.Errorf("ClipMessage changed a short message")
	}
}

func TestTrimKeepsWhatControllersRead(t *testing.T) {
	started, finished := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}},
	}}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	last := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Message: "boom", StartedAt: started, FinishedAt: finished}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"},
			Annotations:       map[string]string{"padding": strings.Repeat("x", 1<<10)},
			CreationTimestamp: started, DeletionTimestamp: &finished,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", Affinity: affinity,
			Containers:  []corev1.Container{{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "K", Value: "V"}}}},
			Volumes:     []corev1.Volume{{Name: "v"}},
			Tolerations: []corev1.Toleration{{Key: "k"}},
		},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodRunning,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			StartTime:             &started,
			PodIP:                 "10.0.0.1",
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Image: "init:1", State: last, ImageID: "sha256:1"}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: "app:1", State: waiting, LastTerminationState: last, RestartCount: 4, Ready: false,
				ImageID: "sha256:2", ContainerID: "containerd://x", VolumeMounts: []corev1.VolumeMountStatus{{Name: "v"}},
			}},
		},
	}
	reason, msg := Cause(pod)
	out, err := Trim(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if r, m := Cause(got); r != reason || m != msg {
		t.Errorf("Cause after Trim = %q, %q; before %q, %q", r, m, reason, msg)
	}
	want := pod.DeepCopy()
	want.ManagedFields, want.Annotations = nil, nil
	want.Spec = corev1.PodSpec{NodeName: "n1", Affinity: affinity}
	want.Status.PodIP = ""
	want.Status.InitContainerStatuses[0].ImageID = ""
	cs := &want.Status.ContainerStatuses[0]
	cs.ImageID, cs.ContainerID, cs.VolumeMounts = "", "", nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Trim kept or dropped the wrong fields:\ngot  %+v\nwant %+v", got, want)
	}
	if other, _ := Trim(&corev1.Node{}); !equality.Semantic.DeepEqual(other, &corev1.Node{}) {
		t.Errorf("Trim changed a %T", other)
	}
}
