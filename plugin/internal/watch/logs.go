package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// ContainerName is the container the operator runs a task in; it is
// operator/agenttask.ContainerName, repeated so the plugin does not link the
// operator.
const ContainerName = "task"

// drainTimeout bounds how long logs may go on arriving once the task ended.
const drainTimeout = time.Minute

// StreamLogs copies the logs of the task container of pod to w. With
// opts.Follow it returns when the container stops.
func StreamLogs(ctx context.Context, kc kubernetes.Interface, ns, pod string, opts corev1.PodLogOptions, w io.Writer) error {
	opts.Container = ContainerName
	return StreamPodLogs(ctx, kc, ns, pod, opts, w)
}

// StreamPodLogs copies the logs of opts.Container of pod to w, line by
// line, each made safe for a terminal (printing.SafeLines): kubectl logs
// passes a container's bytes raw, but here lines of many pods meet behind
// prefixes and in the live view, where one line's escape codes or carriage
// return could clear the screen, set the clipboard or rewrite another
// pod's line. 'kubectl logs' gives the raw bytes. A node that serves no
// logs gives a *NoLogsError.
func StreamPodLogs(ctx context.Context, kc kubernetes.Interface, ns, pod string, opts corev1.PodLogOptions, w io.Writer) error {
	rc, err := kc.CoreV1().Pods(ns).GetLogs(pod, &opts).Stream(ctx)
	if err != nil {
		if kubeletUnreachable(err) {
			return noLogs(ctx, kc, ns, pod, err)
		}
		return err
	}
	defer rc.Close()
	safe := printing.NewSafeLines(w)
	_, err = io.Copy(safe, rc)
	if cerr := safe.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil {
		return nil // cut short on purpose
	}
	return err
}

// kwokNodeAnnotation marks the nodes kwok simulates.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// NoLogsError says that the API server could not get a pod's logs from its
// node: the node is simulated (kwok) and has no kubelet, or its kubelet
// cannot be reached. The pod and the cluster are fine.
type NoLogsError struct {
	Pod, Node string
	// Simulated is true for a kwok node.
	Simulated bool
	// NodeHidden: the user may not read the node (a tenant's member), so
	// which case it is cannot be told.
	NodeHidden bool
	Err        error
}

func (e *NoLogsError) Error() string {
	if e.Simulated {
		return fmt.Sprintf("pod %s runs on simulated node %s (kwok): simulated pods have no logs", e.Pod, e.Node)
	}
	if e.NodeHidden {
		return fmt.Sprintf("the API server cannot read the logs of pod %s from node %s: it is a simulated (kwok) node, whose pods have no logs, or its kubelet cannot be reached: %v", e.Pod, e.Node, e.Err)
	}
	node := e.Node
	if node == "" {
		node = "its node"
	}
	return fmt.Sprintf("the API server cannot reach the kubelet of %s to read the logs of pod %s: %v", node, e.Pod, e.Err)
}

func (e *NoLogsError) Unwrap() error { return e.Err }

// kubeletUnreachable: the API server answered, but its own request to the
// node's kubelet failed (a 5xx naming the kubelet's containerLogs URL).
func kubeletUnreachable(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	st := se.Status()
	return st.Code >= 500 && strings.Contains(st.Message, "/containerLogs/")
}

// noLogs finds the pod's node to say which case it is; a user who may not
// read nodes gets the general message.
func noLogs(ctx context.Context, kc kubernetes.Interface, ns, pod string, err error) error {
	e := &NoLogsError{Pod: pod, Err: err}
	if p, gerr := kc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); gerr == nil {
		e.Node = p.Spec.NodeName
	}
	if e.Node != "" {
		n, gerr := kc.CoreV1().Nodes().Get(ctx, e.Node, metav1.GetOptions{})
		switch {
		case gerr == nil:
			_, e.Simulated = n.Annotations[kwokNodeAnnotation]
		case apierrors.IsForbidden(gerr):
			e.NodeHidden = true
		}
	}
	return e
}

// TaskFollower follows one AgentTask until it finishes: it reports each
// change, and with Logs streams the logs of each attempt's pod in turn once
// the task runs. Everything comes from watch events.
type TaskFollower struct {
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
func (f *TaskFollower) Run(ctx context.Context, ns, name string) (*schedv1.AgentTask, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Attempts run one after another, so their logs are streamed in order.
	pods := make(chan string, 16)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		opts := corev1.PodLogOptions{Follow: true, TailLines: f.Tail}
		for pod := range pods {
			err := StreamLogs(ctx, f.Kube, ns, pod, opts, f.Out)
			opts.TailLines = nil
			if err != nil && ctx.Err() == nil {
				f.note(fmt.Sprintf("cannot stream the logs of pod %s: %v", pod, err))
			}
		}
	}()

	var final *schedv1.AgentTask
	lastPod := ""
	err := Until(ctx, f.Client, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, &schedv1.AgentTaskList{},
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

func (f *TaskFollower) note(s string) {
	if f.Note != nil {
		f.Note(s)
	}
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

// LineWriter is an io.Writer that hands each complete line, without its
// newline, to a function; Close hands over an unfinished last line. It is
// safe for concurrent use.
type LineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func(string)
}

// Lines returns a LineWriter calling line for each line.
func Lines(line func(string)) *LineWriter { return &LineWriter{line: line} }

func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(string(bytes.TrimSuffix(l.buf[:i], []byte("\r"))))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// Close flushes an unfinished last line.
func (l *LineWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
	return nil
}
