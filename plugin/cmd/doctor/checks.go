package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	"github.com/kubectl-sched/kubectl-sched/api/settings"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// The checks' names, as the report prints them.
const (
	checkCRDs         = "crds"
	checkOperator     = "operator"
	checkLeader       = "leader"
	checkPolicies     = "policies"
	checkOptionalAPIs = "optional-apis"
	checkSettings     = "settings"
	checkNodes        = "nodes"
	checkRBAC         = "rbac"
)

// LeaderElectionID is the operator's leader Lease (operator/app's default
// --leader-election-id; the plugin does not import the operator).
const LeaderElectionID = "kubectl-sched-operator.sched.kubectl-sched.dev"

const fixInstall = "kubectl sched install"

// notServed starts the CRD check's message when resources are missing, the
// case that exits 4.
const notServed = "not served:"

// crdResources are the plugin's kinds, as their CRDs name them.
var crdResources = func() []string {
	var out []string
	for _, k := range kinds.Kinds {
		out = append(out, k.Plural)
	}
	return out
}()

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

type doctor struct {
	c      *kube.Clients
	now    time.Time
	plugin string
}

// skipped is a check the user may not read the objects of. Other errors
// fail it: they are the cluster's problem, not the user's rights.
func skipped(name string, err error, verb, what string) Check {
	if !apierrors.IsForbidden(err) {
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("cannot %s %s: %v", verb, what, err)}
	}
	msg := err.Error()
	var e *cmdutil.Error
	if errors.As(cmdutil.API(err, verb, what), &e) {
		msg = e.Msg // names the user, verb and resource as RBAC checked them
	}
	if !strings.HasPrefix(msg, "forbidden: ") {
		msg = "forbidden: " + msg
	}
	return Check{Name: name, Status: Skip, Message: "(" + msg + ")"}
}

// crds checks that the API server serves the kinds (discovery, which
// every user may read) and that their CRDs are at the plugin's version.
func (d *doctor) crds(ctx context.Context) Check {
	served := map[string]bool{}
	list, err := d.c.Kube.Discovery().ServerResourcesForGroupVersion(schedv1.GroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return skipped(checkCRDs, err, "get", "the resources of "+schedv1.GroupVersion.String())
	}
	if list != nil {
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
	}
	embedded := map[string]*unstructured.Unstructured{}
	objs, err := manifests.Objects(manifests.ManifestImage, schedv1.DefaultOperatorNamespace, "")
	if err != nil {
		return Check{Name: checkCRDs, Status: Fail, Message: "the embedded manifests are broken: " + err.Error()}
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			embedded[o.GetName()] = o
		}
	}
	versions := map[string]string{}
	var differ []string
	readErr := ""
	for _, r := range crdResources {
		if !served[r] {
			continue
		}
		name := r + "." + schedv1.GroupName
		crd, err := d.c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			readErr = skipped(checkCRDs, err, "get", "customresourcedefinitions.apiextensions.k8s.io "+name).Message
			break
		}
		versions[r] = crd.GetLabels()[manifests.VersionLabel]
		if !sameVersions(embedded[name], crd) {
			differ = append(differ, r)
		}
	}
	return crdStatus(served, versions, differ, readErr, d.plugin)
}

// sameVersions reports whether the installed CRD serves the versions, with
// the schemas, that the plugin's own does: whether install from this
// plugin would leave it as it is.
func sameVersions(embedded, installed *unstructured.Unstructured) bool {
	if embedded == nil {
		return false
	}
	want, _, _ := unstructured.NestedSlice(embedded.Object, "spec", "versions")
	got, _, _ := unstructured.NestedSlice(installed.Object, "spec", "versions")
	return equality.Semantic.DeepEqual(want, got)
}

// crdStatus: missing kinds fail (exit 4). CRDs whose versions and
// schemas differ from the plugin's, or labelled with another release, warn:
// another version of install applied them. readErr says why the CRDs
// could not be read.
func crdStatus(served map[string]bool, versions map[string]string, differ []string, readErr, plugin string) Check {
	c := Check{Name: checkCRDs}
	var missing []string
	for _, r := range crdResources {
		if !served[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		c.Status, c.Fix = Fail, fixInstall
		c.Message = fmt.Sprintf("%s %s (group %s)", notServed, strings.Join(missing, ", "), schedv1.GroupVersion)
		return c
	}
	c.Status = OK
	c.Message = fmt.Sprintf("%d of %d served (%s)", len(crdResources), len(crdResources), schedv1.GroupVersion)
	if readErr != "" {
		c.Message += "; not compared with the plugin's " + readErr
		return c
	}
	var other []string
	for _, r := range crdResources {
		if v := versions[r]; v != "" && release(plugin) != "" && release(v) != release(plugin) {
			other = append(other, r+" "+v)
		}
	}
	switch {
	case len(differ) > 0:
		c.Message += "; " + strings.Join(differ, ", ") + " differ from this plugin's (" + plugin + "): another version installed them"
	case len(other) > 0:
		c.Message += "; at another version than the plugin's " + plugin + ": " + strings.Join(other, ", ")
	default:
		c.Message += "; the same as this plugin's (" + plugin + ")"
		if release(plugin) == "" && len(versions) > 0 && versions[crdResources[0]] != "" {
			c.Message += "; version labels not compared: the plugin is a development build"
		}
		return c
	}
	c.Status = Warn
	c.Fix = "run 'kubectl sched install' with the plugin of the operator's version ('kubectl krew upgrade sched' first if this one is older)"
	return c
}

// release is a version's major.minor, "" for a development build: patch
// releases share their CRDs.
func release(v string) string { return buildinfo.MajorMinor(v) }

// operatorDeployment finds the operator's Deployment in any namespace; a
// check is returned instead when it cannot be listed.
func (d *doctor) operatorDeployment(ctx context.Context) (*appsv1.Deployment, *Check) {
	list, err := d.c.Kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: manifests.OperatorLabel})
	if err != nil {
		c := skipped(checkOperator, err, "list", "deployments.apps")
		return nil, &c
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// operatorStatus: the Deployment must have all its replicas ready.
// leaderHeld tells an operator run outside the cluster (install
// --without-operator) from none at all.
func operatorStatus(dep *appsv1.Deployment, plugin string, leaderHeld bool) Check {
	c := Check{Name: checkOperator}
	if dep == nil {
		if leaderHeld {
			c.Status, c.Message = Warn, "no Deployment labelled "+manifests.OperatorLabel+", but an operator holds the leader Lease (run outside the cluster?)"
			c.Fix = fixInstall + " to run it in the cluster"
			return c
		}
		c.Status, c.Fix = Fail, fixInstall
		c.Message = "no Deployment labelled " + manifests.OperatorLabel + " in any namespace"
		return c
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	where := fmt.Sprintf("Deployment %s/%s", dep.Namespace, dep.Name)
	v := dep.Labels[manifests.VersionLabel]
	if v == "" {
		v = "unknown version"
	}
	ready := dep.Status.ReadyReplicas
	if want == 0 || ready < want {
		c.Status, c.Fix = Fail, fmt.Sprintf("kubectl -n %s describe deployment %s; kubectl -n %s logs deployment/%s", dep.Namespace, dep.Name, dep.Namespace, dep.Name)
		c.Message = fmt.Sprintf("%s (%s): %d of %d replicas ready", where, v, ready, want)
		return c
	}
	c.Status, c.Message = OK, fmt.Sprintf("%s (%s): %d of %d replicas ready", where, v, ready, want)
	if w := buildinfo.SkewWarning(plugin, dep.Labels[manifests.VersionLabel]); w != "" {
		skew, _, _ := strings.Cut(strings.TrimPrefix(w, "Warning: "), ": upgrade it with")
		c.Status, c.Message, c.Fix = Warn, c.Message+"; "+skew, "kubectl krew upgrade sched"
		if strings.Contains(w, "'"+fixInstall+"'") {
			c.Fix = fixInstall
		}
	}
	return c
}

// leader reads the leader Lease in ns.
func (d *doctor) leader(ctx context.Context, ns string) (*coordinationv1.Lease, Check) {
	lease, err := d.c.Kube.CoordinationV1().Leases(ns).Get(ctx, LeaderElectionID, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, leaderStatus(nil, ns, d.now)
	case err != nil:
		return nil, skipped(checkLeader, err, "get", fmt.Sprintf("leases.coordination.k8s.io %q", LeaderElectionID))
	}
	return lease, leaderStatus(lease, ns, d.now)
}

// leaseHeld reports a holder that renewed within the lease's duration.
func leaseHeld(l *coordinationv1.Lease, now time.Time) bool {
	if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return false
	}
	d := 15 * time.Second // client-go's default
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(l.Spec.RenewTime.Time) <= d
}

// leaderStatus: a holder must have renewed within the lease's duration,
// else no operator is reconciling.
func leaderStatus(l *coordinationv1.Lease, ns string, now time.Time) Check {
	c := Check{Name: checkLeader}
	where := fmt.Sprintf("Lease %s/%s", ns, LeaderElectionID)
	logs := fmt.Sprintf("kubectl -n %s logs deployment/kubectl-sched-operator", ns)
	if l == nil {
		c.Status, c.Message, c.Fix = Fail, "no "+where+": no operator has led", fixInstall+"; if the operator runs, "+logs
		return c
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder == "" || l.Spec.RenewTime == nil {
		c.Status, c.Message, c.Fix = Fail, where+" has no holder: no operator leads", logs
		return c
	}
	age := now.Sub(l.Spec.RenewTime.Time)
	if age < 0 {
		age = 0
	}
	msg := fmt.Sprintf("%s held by %s, renewed %s ago", where, holder, formatAge(age))
	if !leaseHeld(l, now) {
		c.Status, c.Message, c.Fix = Fail, msg+", past its duration: the leader stopped renewing", logs
		return c
	}
	c.Status, c.Message = OK, msg
	return c
}

func formatAge(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return d.String()
}

// policies checks the admission policies and bindings install applies,
// read from the embedded config so the list is kept once.
func (d *doctor) policies(ctx context.Context, ns string) Check {
	objs, err := manifests.Objects(manifests.ManifestImage, ns, "")
	if err != nil {
		return Check{Name: checkPolicies, Status: Fail, Message: "the embedded manifests are broken: " + err.Error()}
	}
	// The External Secrets policy is optional (install adds it when the
	// cluster serves External Secrets): checked when any part of it is there.
	optional, err := manifests.ExternalSecretsPolicy("{{namespace}}/", nil)
	if err != nil {
		return Check{Name: checkPolicies, Status: Fail, Message: "the embedded manifests are broken: " + err.Error()}
	}
	want, err := bindingsOf(objs)
	if err != nil {
		return Check{Name: checkPolicies, Status: Fail, Message: "the embedded manifests are broken: " + err.Error()}
	}
	wantOptional, err := bindingsOf(optional)
	if err != nil {
		return Check{Name: checkPolicies, Status: Fail, Message: "the embedded manifests are broken: " + err.Error()}
	}
	api := d.c.Kube.AdmissionregistrationV1()
	policies, err := api.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return skipped(checkPolicies, err, "list", "validatingadmissionpolicies.admissionregistration.k8s.io")
	}
	bindings, err := api.ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return skipped(checkPolicies, err, "list", "validatingadmissionpolicybindings.admissionregistration.k8s.io")
	}
	// The operator's settings, when they can be read.
	var settings map[string]string
	if cm, err := d.c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, manifests.ConfigMapName, metav1.GetOptions{}); err == nil {
		settings = cm.Data
	}
	// Wanted once External Secrets is served, as install would add it
	// then: installed after kubectl-sched, it finds no policy.
	why := d.externalSecretsWithoutPolicy(settings)
	for _, w := range wantOptional {
		if why != "" ||
			slices.ContainsFunc(policies.Items, func(p admissionregistrationv1.ValidatingAdmissionPolicy) bool { return p.Name == w.Policy }) ||
			slices.ContainsFunc(bindings.Items, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool { return b.Name == w.Name }) {
			w.Why = why
			want = append(want, w)
		}
	}
	c := policiesStatus(want, policies.Items, bindings.Items)
	if drift := servedDrift(policies.Items, settings); drift != "" {
		c.Details = append(c.Details, drift)
		if c.Status == OK {
			c.Status, c.Fix = Warn, fixInstall
			c.Message += "; the operator's namespaces differ from its setting"
		}
	}
	return c
}

// externalSecretsWithoutPolicy says why the External Secrets policy must be
// there when the cluster serves External Secrets and the operator's key
// template confines keys (install adds the policy then, and warns without
// a template); "" when it need not be. Settings that cannot be read leave
// the template at its default, which confines.
func (d *doctor) externalSecretsWithoutPolicy(settings map[string]string) string {
	served, err := manifests.ExternalSecretsServed(d.c.Kube.Discovery())
	if err != nil || !served {
		return ""
	}
	if template, ok := settings["EXTERNAL_SECRET_KEY_TEMPLATE"]; ok && template == "" {
		return ""
	}
	return "External Secrets is served, and without it any namespace's ExternalSecrets read any key of a ClusterSecretStore; install adds it"
}

// servedDrift says how the namespaces the installed
// kubectl-sched-operator-managed policy holds the operator to differ from
// those its NAMESPACE_SELECTOR setting serves (edited in the ConfigMap,
// not by install, which writes both); "" when they agree or either is
// missing or unreadable.
func servedDrift(policies []admissionregistrationv1.ValidatingAdmissionPolicy, settings map[string]string) string {
	selector, ok := settings["NAMESPACE_SELECTOR"]
	if !ok {
		return ""
	}
	want, err := manifests.SelectorCEL(selector)
	if err != nil {
		return ""
	}
	for _, p := range policies {
		if p.Name != manifests.OperatorManagedPolicy {
			continue
		}
		for _, v := range p.Spec.Variables {
			if v.Name == "served" && v.Expression != want {
				return fmt.Sprintf("policy %s holds the operator to other namespaces than NAMESPACE_SELECTOR %q selects (changed in the ConfigMap, not by install): it refuses the operator's writes in namespaces it newly serves", p.Name, selector)
			}
		}
	}
	return ""
}

// bindingsOf lists the policy bindings among objs.
func bindingsOf(objs []*unstructured.Unstructured) ([]wantBinding, error) {
	var want []wantBinding
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			return nil, err
		}
		want = append(want, wantBinding{Name: b.Name, Policy: b.Spec.PolicyName, Actions: b.Spec.ValidationActions})
	}
	return want, nil
}

// wantBinding is a binding as install applies it. Why, when set, says why
// a missing optional one is wanted.
type wantBinding struct {
	Name, Policy string
	Actions      []admissionregistrationv1.ValidationAction
	Why          string
}

// policiesStatus: every binding install applies must exist, name its
// policy, which must exist, and keep its actions (a Deny turned into Audit
// or Warn lets everything through); type-checking warnings mean a policy
// does not check what it should.
func policiesStatus(want []wantBinding, policies []admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) Check {
	c := Check{Name: checkPolicies}
	gotPolicy := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for i := range policies {
		gotPolicy[policies[i].Name] = &policies[i]
	}
	gotBinding := map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for i := range bindings {
		gotBinding[bindings[i].Name] = &bindings[i]
	}
	var problems, warned []string
	broken := 0
	for _, w := range want {
		p, b := gotPolicy[w.Policy], gotBinding[w.Name]
		n := len(problems)
		why := ""
		if w.Why != "" {
			why = ": " + w.Why
		}
		switch {
		case p == nil:
			problems = append(problems, "policy "+w.Policy+" missing"+why)
			why = "" // said once
		case p.Status.TypeChecking != nil && len(p.Status.TypeChecking.ExpressionWarnings) > 0:
			tw := p.Status.TypeChecking.ExpressionWarnings[0]
			warned = append(warned, fmt.Sprintf("policy %s: %s: %s", w.Policy, tw.FieldRef, tw.Warning))
		}
		switch {
		case b == nil:
			problems = append(problems, "binding "+w.Name+" missing"+why)
		case b.Spec.PolicyName != w.Policy:
			problems = append(problems, fmt.Sprintf("binding %s binds %q, not %s", w.Name, b.Spec.PolicyName, w.Policy))
		case !slices.Equal(sortedActions(b.Spec.ValidationActions), sortedActions(w.Actions)):
			problems = append(problems, fmt.Sprintf("binding %s has validationActions %v, not %v", w.Name, b.Spec.ValidationActions, w.Actions))
		}
		if len(problems) > n {
			broken++
		}
	}
	problems = append(problems, warned...)
	c.Details = problems
	switch {
	case len(gotPolicy) == 0 && len(gotBinding) == 0 && len(want) > 0:
		// Nothing installed: a line per object would say nothing more.
		c.Status, c.Fix, c.Details = Fail, fixInstall, nil
		c.Message = fmt.Sprintf("none of the %d installed", len(want))
	case broken > 0:
		c.Status, c.Fix = Fail, fixInstall
		c.Message = fmt.Sprintf("%d of %d not bound and active", broken, len(want))
	case len(warned) > 0:
		c.Status, c.Fix = Warn, fixInstall+" (with a plugin whose CRDs match the installed ones)"
		c.Message = fmt.Sprintf("%d of %d bound and active; %d with type-checking warnings", len(want), len(want), len(warned))
	default:
		c.Status = OK
		c.Message = fmt.Sprintf("%d of %d bound and active", len(want), len(want))
	}
	return c
}

func sortedActions(a []admissionregistrationv1.ValidationAction) []admissionregistrationv1.ValidationAction {
	return slices.Sorted(slices.Values(a))
}

// optionalAPIs reads what the operator reported on its status Lease.
func (d *doctor) optionalAPIs(ctx context.Context, ns string) Check {
	lease, err := d.c.Kube.CoordinationV1().Leases(ns).Get(ctx, operatorstatus.LeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = nil
	case err != nil:
		return skipped(checkOptionalAPIs, err, "get", fmt.Sprintf("leases.coordination.k8s.io %q", operatorstatus.LeaseName))
	}
	return optionalAPIsStatus(lease, ns)
}

// optionalAPIsStatus: a missing report warns (the operator has not run,
// or is older); what the operator found is listed, not judged.
func optionalAPIsStatus(l *coordinationv1.Lease, ns string) Check {
	c := Check{Name: checkOptionalAPIs}
	where := fmt.Sprintf("Lease %s/%s", ns, operatorstatus.LeaseName)
	if l == nil {
		c.Status, c.Message, c.Fix = Warn, "not reported: no "+where, "start the operator ("+fixInstall+"); it reports them when it starts"
		return c
	}
	value, ok := l.Annotations[operatorstatus.AnnotationOptionalAPIs]
	if !ok {
		c.Status, c.Message, c.Fix = Warn, where+" has no annotation "+operatorstatus.AnnotationOptionalAPIs, fixInstall+" (the operator may be older than the plugin)"
		return c
	}
	apis, err := operatorstatus.Decode(value)
	if err != nil {
		c.Status, c.Message, c.Fix = Warn, where+": "+err.Error(), fixInstall
		return c
	}
	inUse := 0
	for _, a := range apis {
		if a.State == operatorstatus.InUse {
			inUse++
		}
		c.Details = append(c.Details, a.String())
	}
	c.Status = OK
	c.Message = fmt.Sprintf("%d reported, %d in use", len(apis), inUse)
	if l.Spec.RenewTime != nil {
		c.Message += " (at " + l.Spec.RenewTime.UTC().Format(time.RFC3339) + ")"
	}
	return c
}

// settings lists the operator's settings in effect.
func (d *doctor) settings(ctx context.Context, ns string) Check {
	cm, err := d.c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, manifests.ConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = nil
	case err != nil:
		return skipped(checkSettings, err, "get", fmt.Sprintf("configmaps %q", manifests.ConfigMapName))
	}
	return settingsStatus(cm, ns)
}

// settingsStatus lists the settings in install's order, then any others.
// Without the ConfigMap the operator runs on its defaults: a warning.
func settingsStatus(cm *corev1.ConfigMap, ns string) Check {
	c := Check{Name: checkSettings}
	where := fmt.Sprintf("ConfigMap %s/%s", ns, manifests.ConfigMapName)
	if cm == nil {
		c.Status, c.Message, c.Fix = Warn, "no "+where+": the operator runs on its defaults", fixInstall
		return c
	}
	known := map[string]bool{}
	for _, s := range settings.All {
		known[s.Env] = true
		if v, ok := cm.Data[s.Env]; ok {
			c.Details = append(c.Details, s.Env+"="+v)
		}
	}
	var others []string
	for k, v := range cm.Data {
		if !known[k] {
			others = append(others, k+"="+v)
		}
	}
	slices.Sort(others)
	c.Details = append(c.Details, others...)
	c.Status = OK
	c.Message = fmt.Sprintf("%d set in %s", len(cm.Data), where)
	return c
}
