package agenttask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// A task's pods' logs outlive them. The operator holds every pod of a
// task's Job (the outputs finalizer) until it has read what it needs of
// it; at that same point, once the pod has ended, it reads the end of its
// task container's log and writes it in the task's status (status.logs,
// one record per pod), in the status write that records the attempt. Only
// then may the pod go: pruned (prune passes over a pod whose log is not
// kept), released at the task's end, deleted after
// --succeeded-pod-retention or with its Job. A restart before that write
// reads the log again; after it, the record is there and the log is never
// read twice. A pod whose log cannot be read (its node serves none, as
// kwok's do not, or its kubelet is out of reach) gets a record that says
// why, so nothing waits for it.
//
// The records are cached without their text (TrimTask): a status write
// that adds one is computed from the task read whole, past the cache
// (readLogs), so the merge patch carries the kept logs as they are.

const (
	// logReadBytes bounds one read of a log (limitBytes): what the
	// operator holds of it in memory at once.
	logReadBytes = 256 << 10
	// logReadTimeout bounds one read: a kubelet out of reach answers with
	// a dial timeout, which would hold a worker.
	logReadTimeout = 10 * time.Second
	// objectBytes is the most one object may hold: etcd's request limit
	// (--max-request-bytes, 1.5 MiB by default).
	objectBytes = 3 << 19
	// statusReserve is what a task's status may still grow by once its
	// logs are kept: its messages and conditions.
	statusReserve = 64 << 10
	// bindingGrace is how long a log read may be refused after the
	// operator's RoleBinding was made (RBAC's caches catching up), before
	// the log is recorded Unavailable.
	bindingGrace = 30 * time.Second
	// quietNode is how long a node whose kubelet served no log is not
	// asked again: each ask of a kubelet out of reach may take
	// logReadTimeout.
	quietNode = time.Minute
)

// endedPod reports whether the pod's task container ran and ended: its
// log is whole and may be kept.
func endedPod(p *corev1.Pod) bool {
	return podStarted(p) && (terminatedState(p) != nil || podFinished(p))
}

// logsDue are the pods of pods whose log the task's status does not keep
// yet and may be read: ended (or, with stopping, started: the task is
// over or its Job gone, so they are being stopped and are released once
// read), not pruned, and held by the outputs finalizer or not being
// deleted.
func logsDue(task *schedv1.AgentTask, pods []corev1.Pod, stopping bool) []corev1.Pod {
	var due []corev1.Pod
	for _, p := range pods {
		if !(endedPod(&p) || stopping && podStarted(&p)) || schedv1.KeptLogOf(task.Status.Logs, p.Name) != nil ||
			task.Status.Pruned != nil && contains(task.Status.Pruned.Pods, p.Name) ||
			!p.DeletionTimestamp.IsZero() && !contains(p.Finalizers, OutputsFinalizer) {
			continue
		}
		due = append(due, p)
	}
	return due
}

// logKept reports whether pod may go as far as its log is concerned: its
// log is kept, or it never ran.
func logKept(logs []schedv1.KeptLog, p *corev1.Pod) bool {
	return !podStarted(p) || schedv1.KeptLogOf(logs, p.Name) != nil
}

// keptPods are the pods that may go as far as their logs are concerned.
func keptPods(logs []schedv1.KeptLog, pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		if logKept(logs, &pods[i]) {
			out = append(out, pods[i])
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readLogs reads the logs the task's status does not keep yet of its
// ended pods (its Job's, matched by UID by the caller), or of all its
// started ones when stopping (logsDue). When there are any, it returns the
// task read whole past the cache, whose status the records go into, and
// the records; otherwise nil, nil.
func (r *Reconciler) readLogs(ctx context.Context, task *schedv1.AgentTask, pods []corev1.Pod, stopping bool) (*schedv1.AgentTask, []schedv1.KeptLog, error) {
	due := logsDue(task, pods, stopping)
	if len(due) == 0 || r.Logs == nil {
		return nil, nil, nil
	}
	whole := task
	if r.APIReader != nil {
		whole = &schedv1.AgentTask{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(task), whole); err != nil {
			return nil, nil, fmt.Errorf("read task %s to keep its pods' logs: %w", task.Name, err)
		}
		if whole.UID != task.UID {
			return nil, nil, fmt.Errorf("task %s was deleted and made again since the cache saw it", task.Name)
		}
		// The cache may lag behind a status that keeps them already.
		if due = logsDue(whole, due, stopping); len(due) == 0 {
			return nil, nil, nil
		}
	}
	var add []schedv1.KeptLog
	for i := range due {
		rec, err := r.readLog(ctx, &due[i])
		if err != nil {
			return nil, nil, err
		}
		add = append(add, rec)
	}
	return whole, add, nil
}

// readLog reads the end of pod's log into a record: Kept or Truncated,
// or Unavailable when its node serves none or the operator may not read
// it. An error is for the workqueue to retry: the API server could not
// be asked, or the operator's RoleBinding is new.
func (r *Reconciler) readLog(ctx context.Context, pod *corev1.Pod) (schedv1.KeptLog, error) {
	rec := schedv1.KeptLog{Pod: pod.Name, CreationTime: ptr.To(pod.CreationTimestamp)}
	if term := terminatedState(pod); term != nil {
		rec.ExitCode = ptr.To(term.ExitCode)
	}
	unavailable := func(msg string) (schedv1.KeptLog, error) {
		rec.Reason, rec.Message = schedv1.LogUnavailable, clip(msg, 1024)
		return rec, nil
	}
	node := pod.Spec.NodeName
	if node == "" {
		return unavailable("the pod never ran on a node, so it has no log")
	}
	if msg, ok := r.quiet.get(node, r.Clock.Now()); ok {
		return unavailable(msg)
	}
	// One line more than is kept tells a longer log.
	raw, err := r.fetchLog(ctx, pod, schedv1.KeptLogLines+1)
	longer := bytes.Count(raw, []byte("\n")) > schedv1.KeptLogLines
	cut := err == nil && len(raw) >= logReadBytes
	if cut {
		// The last lines are long: ask for as many as were whole in what
		// was read, at most what KeptLogBytes could hold of such lines.
		lines := min(max(bytes.Count(raw, []byte("\n")), 1), schedv1.KeptLogBytes/(logReadBytes/(schedv1.KeptLogLines+1)))
		raw, err = r.fetchLog(ctx, pod, int64(lines))
		longer, cut = true, err == nil && len(raw) >= logReadBytes
	}
	var se apierrors.APIStatus
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil, kubeletUnreachable(err):
		msg := fmt.Sprintf("the API server could not read the log from node %s (a simulated node serves none; a real one's kubelet was out of reach): %v", node, err)
		// Not the error: it names this pod, and the message goes to other
		// namespaces' tasks.
		r.quiet.add(node, fmt.Sprintf("not asked: the API server could read no log from node %s within the last minute (a simulated node serves none; a real one's kubelet was out of reach)", node), r.Clock.Now())
		return unavailable(msg)
	case apierrors.IsForbidden(err):
		if retry := r.mayReadLogs(ctx, pod.Namespace); retry != nil {
			return rec, retry
		}
		return unavailable(fmt.Sprintf("the operator may not read pods' logs in namespace %s: its RoleBinding %s there does not bind it to the ClusterRole %s (%v)",
			pod.Namespace, schedv1.OperatorPodLogsRole, schedv1.OperatorPodLogsRole, err))
	case apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || errors.As(err, &se) && se.Status().Code == 400:
		// The pod is gone, or no longer has the container's log.
		return unavailable("the log could not be read: " + err.Error())
	default:
		return rec, fmt.Errorf("read the log of pod %s: %w", pod.Name, err)
	}
	rec.Log, rec.Reason, rec.Message = tailOf(raw, longer, cut)
	return rec, nil
}

// fetchLog reads at most logReadBytes of the last lines of pod's task
// container log.
func (r *Reconciler) fetchLog(ctx context.Context, pod *corev1.Pod, lines int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	opts := &corev1.PodLogOptions{Container: ContainerName, TailLines: ptr.To(lines), LimitBytes: ptr.To[int64](logReadBytes)}
	rc, err := r.Logs.Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, logReadBytes))
}

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

// tailOf is what a record keeps of raw, the log's last lines as read:
// its last KeptLogLines lines within KeptLogBytes as JSON stores them,
// bytes that are not UTF-8 replaced. longer says the log has lines
// before raw's; cut, that the read stopped at logReadBytes.
func tailOf(raw []byte, longer, cut bool) (string, schedv1.KeptLogReason, string) {
	all := strings.SplitAfter(strings.ToValidUTF8(string(raw), "\uFFFD"), "\n")
	if all[len(all)-1] == "" {
		all = all[:len(all)-1]
	}
	truncated := longer || cut || len(all) > schedv1.KeptLogLines
	if len(all) > schedv1.KeptLogLines {
		all = all[len(all)-schedv1.KeptLogLines:]
	}
	size := 0
	for _, l := range all {
		size += jsonLen(l)
	}
	for len(all) > 1 && size > schedv1.KeptLogBytes {
		size -= jsonLen(all[0])
		all, truncated = all[1:], true
	}
	kept := strings.Join(all, "")
	if size > schedv1.KeptLogBytes {
		kept, truncated = jsonTail(kept, schedv1.KeptLogBytes), true
	}
	if !truncated {
		return kept, schedv1.LogKept, ""
	}
	msg := fmt.Sprintf("the end of a longer log: its last %d line(s), %d bytes (a pod's kept log is at most %d lines and %d KiB)",
		len(all), len(kept), schedv1.KeptLogLines, schedv1.KeptLogBytes>>10)
	if cut {
		msg += fmt.Sprintf("; its last lines are longer than the %d KiB the operator reads at once, so these are from within them", logReadBytes>>10)
	}
	return kept, schedv1.LogTruncated, msg
}

// jsonLen is how many bytes JSON takes for s within its quotes, as Go's
// encoder writes it (HTML characters escaped too, the most it may take).
func jsonLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			n += 6
		case r == utf8.RuneError:
			n += 3
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}

// jsonTail is the end of s that JSON stores in at most limit bytes,
// cut at a rune.
func jsonTail(s string, limit int) string {
	n, i := 0, len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if n+jsonLen(string(r)) > limit {
			break
		}
		n += jsonLen(string(r))
		i -= size
	}
	return s[i:]
}

// clip shortens a message to at most n bytes, at a rune.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("…")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}

// keepLogs adds records to logs, in the order their pods were created,
// and keeps the text of them all within budget bytes as JSON stores it:
// the oldest pods' logs are given up first (Dropped), and the latest is
// cut to its end when it alone is past the budget.
func keepLogs(logs, add []schedv1.KeptLog, budget int) []schedv1.KeptLog {
	if len(add) == 0 {
		return logs
	}
	out := append(append([]schedv1.KeptLog(nil), logs...), add...)
	slices.SortStableFunc(out, func(a, b schedv1.KeptLog) int {
		return ptr.Deref(a.CreationTime, metav1.Time{}).Compare(ptr.Deref(b.CreationTime, metav1.Time{}).Time)
	})
	size := 0
	for i := range out {
		size += jsonLen(out[i].Log)
	}
	for i := 0; i < len(out)-1 && size > budget; i++ {
		if out[i].Log == "" {
			continue
		}
		size -= jsonLen(out[i].Log)
		out[i].Log, out[i].Reason = "", schedv1.LogDropped
		out[i].Message = fmt.Sprintf("given up to keep the task's kept logs within %d KiB, for its later pods'", budget>>10)
	}
	if last := &out[len(out)-1]; size > budget && last.Log != "" {
		last.Log = jsonTail(last.Log, max(budget, 0))
		last.Reason = schedv1.LogTruncated
		last.Message = fmt.Sprintf("the end of its log within the %d KiB the task's other fields leave of an object's %d KiB", max(budget, 0)>>10, objectBytes>>10)
	}
	if n := len(out) - maxKeptLogs; n > 0 {
		out = out[n:]
	}
	return out
}

// maxKeptLogs bounds status.logs (the CRD's MaxItems): a task runs at
// most its 11 attempts and MaxDisruptions+1 disrupted pods.
const maxKeptLogs = 32

// logBudget is how many bytes the task's kept logs may take: at most
// KeptLogTaskBytes, and what the rest of the task, with room for its
// status to grow, leaves of an object.
func logBudget(task *schedv1.AgentTask) int {
	rest := task.DeepCopy()
	rest.Status.Logs = nil
	rest.ManagedFields = nil // the server's, and a few KiB: in the reserve
	data, err := json.Marshal(rest)
	if err != nil {
		return 0
	}
	return min(schedv1.KeptLogTaskBytes, objectBytes-statusReserve-len(data))
}

// mayReadLogs makes the RoleBinding that lets the operator read the
// pods' logs of namespace ns, after the API server refused it a log
// there. It returns an error to retry the read with (the binding made, or
// made lately: RBAC's caches catch up in a moment), or nil when the read
// will not be allowed: the binding was there for longer than bindingGrace
// and does not allow it, or the binding may not be made.
func (r *Reconciler) mayReadLogs(ctx context.Context, ns string) error {
	now := r.Clock.Now()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.OperatorPodLogsRole, Namespace: ns, Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: schedv1.OperatorPodLogsRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: schedv1.OperatorServiceAccount, Namespace: r.operatorNamespace()}},
	}
	err := r.Create(ctx, rb)
	switch {
	case err == nil:
		r.bound.add(ns, "", now)
		log.FromContext(ctx).Info("Bound the operator to read its tasks' pods' logs in the namespace", "roleBinding", rb.Name)
		return fmt.Errorf("made RoleBinding %s in namespace %s to read its pods' logs: retrying", rb.Name, ns)
	case apierrors.IsAlreadyExists(err):
		first, ok := r.bound.first(ns)
		if !ok {
			r.bound.add(ns, "", now)
			first = now
		}
		if now.Sub(first) < bindingGrace {
			return fmt.Errorf("RoleBinding %s in namespace %s does not let the operator read pods' logs yet: retrying", rb.Name, ns)
		}
		return nil
	default:
		log.FromContext(ctx).Info("Cannot bind the operator to read pods' logs in the namespace", "error", err.Error())
		return nil
	}
}

func (r *Reconciler) operatorNamespace() string {
	if r.Namespace != "" {
		return r.Namespace
	}
	return schedv1.DefaultOperatorNamespace
}

// byName remembers, for a minute at most, a time and a message per name
// (a node, a namespace); the zero value is ready to use.
type byName struct {
	mu    sync.Mutex
	m     map[string]nameEntry
	swept time.Time
}

type nameEntry struct {
	at  time.Time
	msg string
}

// add sets name's entry unless it has one, and drops the entries older
// than quietNode.
func (b *byName) add(name, msg string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]nameEntry{}
	}
	if now.Sub(b.swept) >= quietNode {
		for k, e := range b.m {
			if now.Sub(e.at) >= quietNode {
				delete(b.m, k)
			}
		}
		b.swept = now
	}
	if _, ok := b.m[name]; !ok {
		b.m[name] = nameEntry{at: now, msg: msg}
	}
}

// get is name's message when its entry is younger than quietNode.
func (b *byName) get(name string, now time.Time) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[name]
	return e.msg, ok && now.Sub(e.at) < quietNode
}

// first is when name's entry was added.
func (b *byName) first(name string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[name]
	return e.at, ok
}
