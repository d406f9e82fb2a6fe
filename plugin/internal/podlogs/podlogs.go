// Package podlogs streams the logs of pods, made safe for a terminal, and
// says why a pod has none (NoLogsError).
package podlogs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// TaskContainer is the container the operator runs a task in; it is
// operator/taskjob.ContainerName, repeated so the plugin does not link the
// operator.
const TaskContainer = "task"

// StreamTask copies the logs of the task container of pod to w. With
// opts.Follow it returns when the container stops.
func StreamTask(ctx context.Context, kc kubernetes.Interface, ns, pod string, opts corev1.PodLogOptions, w io.Writer) error {
	opts.Container = TaskContainer
	return Stream(ctx, kc, ns, pod, opts, w)
}

// Stream copies the logs of opts.Container of pod to w, line by
// line, each made safe for a terminal (printing.SafeLines): kubectl logs
// passes a container's bytes raw, but here lines of many pods meet behind
// prefixes and in the live view, where one line's escape codes or carriage
// return could clear the screen, set the clipboard or rewrite another
// pod's line. 'kubectl logs' gives the raw bytes. A node that serves no
// logs gives a *NoLogsError.
func Stream(ctx context.Context, kc kubernetes.Interface, ns, pod string, opts corev1.PodLogOptions, w io.Writer) error {
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

// KeptNote says what the operator kept of a gone pod's log (a task's
// status.logs, its task container's): ok with a note for the line before
// the text, or not ok with why there is no text.
func KeptNote(rec *schedv1.KeptLog) (note string, ok bool) {
	switch {
	case rec.Reason == schedv1.LogKept && rec.Log != "":
		return fmt.Sprintf("pod %s is gone: its whole log, kept by the operator when the pod ended", rec.Pod), true
	case rec.Reason == schedv1.LogTruncated && rec.Log != "":
		return fmt.Sprintf("pod %s is gone: the end of its log, kept by the operator when the pod ended; truncated, %s", rec.Pod, rec.Message), true
	case rec.Reason == schedv1.LogKept:
		return fmt.Sprintf("pod %s is gone: its log was empty", rec.Pod), false
	case rec.Reason == schedv1.LogDropped:
		return fmt.Sprintf("pod %s is gone, and the operator gave up its kept log: %s", rec.Pod, rec.Message), false
	}
	return fmt.Sprintf("pod %s is gone, and the operator could not keep its log: %s", rec.Pod, rec.Message), false
}

// CopyKept writes a kept log's text to w, only its last tail lines when
// tail >= 0, made safe for a terminal as Stream does.
func CopyKept(w io.Writer, text string, tail int64) error {
	if tail >= 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		text = strings.Join(lines[max(0, int64(len(lines))-tail):], "")
	}
	safe := printing.NewSafeLines(w)
	_, err := io.WriteString(safe, text)
	if cerr := safe.Close(); err == nil {
		err = cerr
	}
	return err
}
