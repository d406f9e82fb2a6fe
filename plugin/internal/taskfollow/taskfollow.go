// Package taskfollow follows an AgentTask until it finishes, with the logs
// of its pods, and says where a task is and why (Explain).
package taskfollow

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/podlogs"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

// drainTimeout bounds how long logs may go on arriving once the task ended.
const drainTimeout = time.Minute

// Follower follows one AgentTask until it finishes: it reports each
// change, and with Logs streams the logs of each attempt's pod in turn once
// the task runs. Everything comes from watch events.
type Follower struct {
	Client client.WithWatch
	Kube   kubernetes.Interface
	// Logs streams the pods' logs to Out.
	Logs bool
	Out  io.Writer
	// Tail limits the first pod's logs to its last lines.
	Tail *int64
	// Note tells why logs could not be streamed.
	Note func(string)
	// OnChange sees every version of the task, for progress and for saying
	// why there is no pod yet (Explain).
	OnChange func(*schedv1.AgentTask)
}

// Run follows the task ns/name and returns its final version. It returns
// ctx.Err() when ctx ends first, and the error of the watch otherwise.
func (f *Follower) Run(ctx context.Context, ns, name string) (*schedv1.AgentTask, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Attempts run one after another, so their logs are streamed in order.
	pods := make(chan string, 16)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		opts := corev1.PodLogOptions{Follow: true, TailLines: f.Tail}
		for pod := range pods {
			err := podlogs.StreamTask(ctx, f.Kube, ns, pod, opts, f.Out)
			opts.TailLines = nil
			if err != nil && ctx.Err() == nil {
				f.note(fmt.Sprintf("cannot stream the logs of pod %s: %v", pod, err))
			}
		}
	}()

	var final *schedv1.AgentTask
	lastPod := ""
	err := waitfor.Object(ctx, f.Client, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, &schedv1.AgentTaskList{},
		func(t *schedv1.AgentTask) (bool, error) {
			if f.OnChange != nil {
				f.OnChange(t)
			}
			st := t.Status
			if f.Logs && st.PodName != "" && st.PodName != lastPod && (st.Phase == schedv1.TaskRunning || st.Phase.Finished()) {
				lastPod = st.PodName
				select {
				case pods <- st.PodName:
				default: // more attempts than a task may have; keep watching
				}
			}
			if st.Phase.Finished() {
				final = t.DeepCopy()
				return true, nil
			}
			return false, nil
		})
	close(pods)
	if err != nil {
		cancel()
	}
	// A finished container's log ends, so this wait is short. The bound is
	// for a kubelet that stops answering mid-stream.
	select {
	case <-streamed:
	case <-time.After(drainTimeout):
		cancel()
		f.note("gave up waiting for the rest of the logs")
		<-streamed
	}
	if err != nil {
		return nil, err
	}
	return final, nil
}

func (f *Follower) note(s string) {
	if f.Note != nil {
		f.Note(s)
	}
}

// RetryPolicy says how a task retries a failed attempt, for a person: how
// often, how long it waits before each retry, and for which exit codes;
// "" when it never retries.
func RetryPolicy(spec schedv1.AgentTaskSpec) string {
	limit := spec.RetryLimit()
	if limit == 0 {
		if spec.Retry != nil {
			return "no retries"
		}
		return ""
	}
	s := fmt.Sprintf("up to %d retries", limit)
	if limit == 1 {
		s = "up to 1 retry"
	}
	if r := spec.Retry; r != nil && r.Backoff != nil {
		s += fmt.Sprintf(", %s before the first, doubled for each next (at most 10m)", printing.FormatDuration(r.Backoff.Duration))
	} else {
		s += ", after the Job controller's wait (10s, doubled for each next)"
	}
	if r := spec.Retry; r != nil && len(r.OnExitCodes) > 0 {
		codes := make([]string, len(r.OnExitCodes))
		for i, c := range r.OnExitCodes {
			codes[i] = strconv.Itoa(int(c))
		}
		s += ", only after exit code " + strings.Join(codes, ", ")
	}
	return s
}

// Explain says where a task is and why, from its status: its phase, its
// reason when that adds something, and its message.
func Explain(t *schedv1.AgentTask) string {
	st := t.Status
	phase := string(st.Phase)
	if phase == "" {
		return "not picked up by the operator yet"
	}
	if st.Reason == phase {
		st.Reason = ""
	}
	phase, st.Reason, st.Message = printing.Line(phase), printing.Line(st.Reason), printing.OneLine(st.Message)
	switch {
	case st.Reason != "" && st.Message != "":
		return fmt.Sprintf("%s, %s: %s", phase, st.Reason, st.Message)
	case st.Message != "":
		return phase + ": " + st.Message
	case st.Reason != "":
		return phase + ", " + st.Reason
	}
	return phase
}
