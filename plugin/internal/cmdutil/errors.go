// Package cmdutil holds what every kubectl sched command shares: exit
// codes, errors that say what to do, and the options every command embeds.
package cmdutil

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exit codes scripts can rely on; ExitCodes says what each means.
const (
	ExitOK = 0
	// ExitError is a failure not listed below.
	ExitError = 1
	// ExitUsage is a bad command line: unknown flag, bad --set, unknown
	// template, missing or unknown template parameter.
	ExitUsage = 2
	// ExitUnreachable: the cluster could not be reached.
	ExitUnreachable = 3
	// ExitNotInstalled: the kubectl-sched CRDs are not installed.
	ExitNotInstalled = 4
	// ExitForbidden: RBAC refused a request.
	ExitForbidden = 5
	// ExitNotFound: the named object does not exist.
	ExitNotFound = 6
	// ExitInvalid: the API server refused the object as invalid.
	ExitInvalid = 7
	// ExitNoLogs: the pod's node serves no logs (a simulated kwok node, or
	// a kubelet the API server cannot reach); the cluster is fine.
	ExitNoLogs = 8
	// ExitQuota: a ResourceQuota refused a create: it is full, or the
	// cluster has not counted what it limits yet. Not RBAC (5): the same
	// command passes once finished runs are deleted or expire.
	ExitQuota = 9
	// ExitFailed: a watched task or workflow ended Failed.
	ExitFailed = 10
	// ExitTimedOut: a watched task or workflow ended in phase Timeout.
	ExitTimedOut = 11
	// ExitWatchTimeout: the command's own --timeout passed first.
	ExitWatchTimeout = 12
	// ExitNoNode: placement explain found a pod with no node it may use
	// (no node fits, or a quota refuses it).
	ExitNoNode = 13
)

// ExitCodeDoc is what one exit code means, in Markdown.
type ExitCodeDoc struct {
	Code    int
	Meaning string
}

// ExitCodes are the codes above in order, with what each means to a
// script: docs/reference/exit-codes.md is written from them (make docs),
// and a test keeps every code in them.
var ExitCodes = []ExitCodeDoc{
	{ExitOK, "success (a watched task or workflow Succeeded)"},
	{ExitError, "any other error"},
	{ExitUsage, "bad command line: unknown flag, wrong number of arguments, bad `--set`, unknown template, missing or unknown template parameter"},
	{ExitUnreachable, "the cluster could not be reached"},
	{ExitNotInstalled, "the kubectl-sched CRDs are not installed (run `kubectl sched install`)"},
	{ExitForbidden, "forbidden: by RBAC (the message names the user, verb, resource and namespace, as the API server checked them, and whom to ask), or by another admission check, such as a namespace being deleted (the message is the cluster's reason); an admission policy's refusal is 7 and a quota's 9"},
	{ExitNotFound, "the named object does not exist"},
	{ExitInvalid, "the API server (or the plugin's own check) refused the object: invalid, or denied by an admission policy (the message is the policy's)"},
	{ExitNoLogs, "the pod's node serves no logs: a simulated (kwok) node, or a kubelet the API server cannot reach; or the operator deleted a succeeded task's pod after `--succeeded-pod-retention` (its outputs are in its status)"},
	{ExitQuota, "a ResourceQuota refused a create: full (the message names the namespace, the quota, its limit, what counts, finished runs until their TTL, the commands to list and delete them and when the first finished one goes), or not counted yet right after install (run it again in a moment)"},
	{ExitFailed, "a watched task or workflow ended Failed or Cancelled (or an app Degraded, or its revision rolled back by the operator)"},
	{ExitTimedOut, "a watched task or workflow ended in phase Timeout"},
	{ExitWatchTimeout, "the command's own `--timeout`/`--watch-timeout` passed first"},
	{ExitNoNode, "`placement explain`: some pod has no node it may use (no node fits, or a quota refuses it)"},
}

// Error is an error with an exit code and a hint saying what to do.
type Error struct {
	Code int
	Msg  string
	Hint string
	Err  error
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Msg
	}
	return e.Msg + "\n" + e.Hint
}

func (e *Error) Unwrap() error { return e.Err }

// Usage is a command-line mistake (exit code 2).
func Usage(hint, format string, args ...any) error {
	return &Error{Code: ExitUsage, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Errorf is an error with a code and hint.
func Errorf(code int, hint, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// ExitCode is the exit code for err.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitError
}

// API turns an error from the API server into one that names what went
// wrong in plain words and what to do. verb and what describe the request
// ("create", "agenttasks.sched.kubectl-sched.dev \"hello\"").
func API(err error, verb, what string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	switch {
	case Unreachable(err):
		return &Error{Code: ExitUnreachable, Err: err,
			Msg:  fmt.Sprintf("cannot reach the cluster: %s", rootCause(err)),
			Hint: "Check the cluster is running and --kubeconfig/--context point at it (kubectl cluster-info)."}
	case NotInstalled(err):
		return &Error{Code: ExitNotInstalled, Err: err,
			Msg:  "the kubectl-sched resources are not installed in this cluster",
			Hint: "Run 'kubectl sched install' (needs cluster-admin), then try again."}
	case QuotaRefusalOf(err) != nil:
		q := QuotaRefusalOf(err)
		return &Error{Code: ExitQuota, Err: err, Msg: fmt.Sprintf("cannot %s %s: %s", verb, what, q.Summary()),
			Hint: fmt.Sprintf("'kubectl describe resourcequota %s' shows what counts; finished tasks and workflows count until their TTL deletes them.", q.Quota)}
	case PolicyDenial(err) != "":
		return &Error{Code: ExitInvalid, Err: err, Msg: fmt.Sprintf("the cluster refused %s: %s", what, PolicyDenial(err)),
			Hint: "An admission policy of the cluster refused it, as the message says: change what it names."}
	case apierrors.IsForbidden(err):
		return forbidden(err, verb, what)
	case apierrors.IsNotFound(err):
		return &Error{Code: ExitNotFound, Err: err,
			Msg:  fmt.Sprintf("%s not found", what),
			Hint: "Check the name and the namespace (-n); 'kubectl sched get' lists what exists."}
	case apierrors.IsInvalid(err):
		return &Error{Code: ExitInvalid, Err: err, Msg: fmt.Sprintf("the cluster refused %s: %s", what, invalidDetails(err)),
			Hint: "Fix the fields named above; 'kubectl explain' describes them."}
	}
	return &Error{Code: ExitError, Err: err, Msg: fmt.Sprintf("cannot %s %s: %v", verb, what, err)}
}

// Unreachable reports a connection failure (refused, DNS, timeout).
func Unreachable(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &oe) || errors.As(err, &ue) && (errors.As(ue.Err, &ne) || strings.Contains(ue.Err.Error(), "connection refused")) ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") ||
		strings.Contains(err.Error(), "i/o timeout") || strings.Contains(err.Error(), "Client.Timeout exceeded")
}

// NotInstalled reports that our API group is not served. The API server
// answers a request for an unserved resource with its plain "404 page not
// found", which client-go turns into a NotFound that names the object as if
// only the object were missing; the cause type tells the two apart.
func NotInstalled(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	if d := se.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == metav1.CauseTypeUnexpectedServerResponse {
				return true
			}
		}
		// A 404 for the whole resource (no name) means the CRD is missing.
		if d.Name == "" && strings.HasSuffix(d.Group, "kubectl-sched.dev") {
			return true
		}
	}
	return strings.Contains(err.Error(), "the server could not find the requested resource")
}

func invalidDetails(err error) string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil || len(se.Status().Details.Causes) == 0 {
		return err.Error()
	}
	var parts []string
	for _, c := range se.Status().Details.Causes {
		parts = append(parts, fmt.Sprintf("%s: %s", c.Field, c.Message))
	}
	return strings.Join(parts, "; ")
}

func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// rbacDenied is how the API server words a request its authorizer denied
// (k8s.io/apiserver's forbiddenMessage): the user, the verb, the resource
// (with its subresource), its API group and the namespace, or the cluster
// scope.
var rbacDenied = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

// forbidden explains a 403. When RBAC denied it, the message names the
// missing permission as the API server checked it (user, verb, resource,
// namespace) and says whom to ask; otherwise an admission policy or a
// quota refused the request, and the server's message says why.
func forbidden(err error, verb, what string) error {
	msg := err.Error()
	var se apierrors.APIStatus
	name := ""
	if errors.As(err, &se) {
		msg = se.Status().Message
		if d := se.Status().Details; d != nil {
			name = d.Name
		}
	}
	m := rbacDenied.FindStringSubmatch(msg)
	if m == nil {
		return &Error{Code: ExitForbidden, Err: err,
			Msg:  fmt.Sprintf("forbidden: the cluster refused to %s %s: %s", verb, what, msg),
			Hint: "Not a missing permission: an admission policy or a quota refused the request, for the reason above."}
	}
	user, verb, resource, group, ns := m[1], m[2], m[3], m[4], m[5]
	sub := ""
	if r, s, ok := strings.Cut(resource, "/"); ok {
		resource, sub = r, s
	}
	if group != "" {
		resource += "." + group
	}
	shown := resource
	if sub != "" {
		shown += "/" + sub
	}
	if name != "" {
		shown += fmt.Sprintf(" %q", name)
	}
	canI := "kubectl auth can-i " + verb + " " + resource
	if sub != "" {
		canI += " --subresource=" + sub
	}
	if ns == "" {
		return &Error{Code: ExitForbidden, Err: err,
			Msg: fmt.Sprintf("forbidden: user %q may not %s %s at the cluster scope", user, verb, shown),
			Hint: fmt.Sprintf("That takes a cluster-wide permission: ask a cluster admin for a ClusterRole that allows %q on %s. '%s' checks.",
				verb, strings.TrimSuffix(resource+"/"+sub, "/"), canI)}
	}
	return &Error{Code: ExitForbidden, Err: err,
		Msg: fmt.Sprintf("forbidden: user %q may not %s %s in namespace %q", user, verb, shown, ns),
		Hint: fmt.Sprintf("Ask an admin of namespace %s for %q on %s there; a tenant's members have what every kubectl sched command needs ('kubectl sched tenant create' binds them to the ClusterRole kubectl-sched-tenant). '%s -n %s' checks.",
			ns, verb, strings.TrimSuffix(resource+"/"+sub, "/"), canI, ns)}
}

// QuotaRefusal is a ResourceQuota's refusal of a create, read from the API
// server's message.
type QuotaRefusal struct {
	// Quota is the ResourceQuota's name.
	Quota string
	// Exceeded are the resources the create would take past the limit.
	Exceeded []QuotaExceeded
	// Unknown are the resources the cluster's quota controller has not
	// counted yet ("status unknown for quota"): the API server refuses
	// every create of them until it has.
	Unknown []string
}

// QuotaExceeded is one resource of a full quota.
type QuotaExceeded struct {
	Resource, Requested, Used, Limited string
}

var (
	quotaExceeded = regexp.MustCompile(`exceeded quota: ([^,]+), requested: (\S*), used: (\S*), limited: (\S*)`)
	quotaUnknown  = regexp.MustCompile(`status unknown for quota: ([^,]+), resources?: (\S+)`)
)

// QuotaRefusalOf parses a quota's refusal (the API server's quota
// admission: "exceeded quota: NAME, requested: ..., used: ..., limited:
// ..." or "status unknown for quota: NAME, resources: ..."), nil for any
// other error.
func QuotaRefusalOf(err error) *QuotaRefusal {
	if err == nil || !apierrors.IsForbidden(err) {
		return nil
	}
	msg := err.Error()
	if m := quotaUnknown.FindStringSubmatch(msg); m != nil {
		return &QuotaRefusal{Quota: m[1], Unknown: strings.Split(m[2], ",")}
	}
	m := quotaExceeded.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	requested, used, limited := pairs(m[2]), pairs(m[3]), pairs(m[4])
	q := &QuotaRefusal{Quota: m[1]}
	for _, r := range slices.Sorted(maps.Keys(limited)) {
		q.Exceeded = append(q.Exceeded, QuotaExceeded{Resource: r, Requested: requested[r], Used: used[r], Limited: limited[r]})
	}
	return q
}

// pairs reads the quota admission's "a=1,b=2".
func pairs(s string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			out[k] = v
		}
	}
	return out
}

// Summary says in one line what the quota refused.
func (q *QuotaRefusal) Summary() string {
	if len(q.Unknown) > 0 {
		return fmt.Sprintf("quota %s has not counted %s yet, so the API server refuses creates of it; try again in a moment", q.Quota, strings.Join(q.Unknown, ", "))
	}
	parts := make([]string, len(q.Exceeded))
	for i, e := range q.Exceeded {
		parts[i] = fmt.Sprintf("%s: %s used of %s, %s more asked", e.Resource, e.Used, e.Limited, e.Requested)
	}
	return fmt.Sprintf("quota %s is full (%s)", q.Quota, strings.Join(parts, "; "))
}

// PolicyDenial is the message of a ValidatingAdmissionPolicy's refusal
// with reason Forbidden (not RBAC, though the API server answers 403), ""
// for any other error. Invalid ones keep their field-by-field report. The API server words it "ValidatingAdmissionPolicy
// 'NAME' with binding 'B' denied request: MESSAGE".
func PolicyDenial(err error) string {
	if err == nil || !apierrors.IsForbidden(err) {
		return ""
	}
	msg := err.Error()
	i := strings.Index(msg, "ValidatingAdmissionPolicy '")
	if i < 0 {
		return ""
	}
	if j := strings.Index(msg[i:], "denied request: "); j >= 0 {
		return msg[i+j+len("denied request: "):]
	}
	return msg[i:]
}
