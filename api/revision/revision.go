// Package revision is what a UserDeployment's revisions are, shared by the
// operator, which records them, and the plugin, which lists them and rolls
// back to one.
//
// A revision records the part of an app that lands in its pods'
// templates (Template): every field of the spec but those that say how
// many pods run, how they are reached and kept (TemplateFields lists both
// sides), and the secret hash annotation. Every change to it makes a new
// revision, a ControllerRevision named <app>.v<N> (Name), controlled by the
// app, labelled with the app and a hash of its data (Hash), its data the
// Template as JSON. Numbers only grow: going back to what an earlier
// revision recorded makes a new one, as a Heroku release does.
//
// Who may make one: only the operator sets the labels
// (config/policy/reserved_labels.yaml), and nobody may change a
// ControllerRevision's data. Still, both sides trust a ControllerRevision
// only after Check (controlled by the app's UID, labelled for it, named and
// numbered as it would be) and Read (data of bounded size that decodes
// strictly into a Template and hashes to its label): so that one made or
// edited by someone who may write ControllerRevisions in the namespace
// cannot have the operator or a user roll an app to it, another app
// included.
package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// MaxNumber is the highest revision number: <app>.v<N> must fit in 63
// characters, and an app's name has at most 50.
const MaxNumber int64 = 99_999_999_999

// MaxData bounds the data of a revision that is read: the API server
// stores no object larger than 1.5 MiB (etcd's default request limit), so
// the template of an app it accepted is smaller still.
const MaxData = 3 << 19

// Template is what a revision records, shaped as the part of a
// UserDeployment it comes from.
type Template struct {
	// Metadata holds the secret hash annotation, when the app has one.
	Metadata *Metadata `json:"metadata,omitempty"`
	// Spec is the app's spec with the fields that are not part of a
	// revision left empty (TemplateFields).
	Spec schedv1.UserDeploymentSpec `json:"spec"`
}

// Metadata is a Template's metadata.
type Metadata struct {
	// Annotations hold schedv1.AnnotationSecretHash only.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SecretHash is the template's secret hash annotation, or "".
func (t Template) SecretHash() string {
	if t.Metadata == nil {
		return ""
	}
	return t.Metadata.Annotations[schedv1.AnnotationSecretHash]
}

// The fields of the spec, by their JSON names, that a revision leaves out:
// how many pods run and how they are reached (replicas, exposure, the
// ingress and network rules), their volumes (fixed once set), the state,
// restarts, and the revision settings themselves. Every other field,
// including those added to the API later, is part of a revision.
var (
	appOutside     = []string{"ingress", "networkIsolation", "allowFrom", "egress", "state", "restartedAt", "progressDeadline", "revisionHistoryLimit", "rollback"}
	serviceOutside = []string{"replicas", "exposure", "ingressPath", "volumes"}
)

// TemplateFields are the JSON names of the spec's and each service's
// fields that a revision records (services and a service's name
// included), in the order of the API types.
func TemplateFields() (app, service []string) {
	return fieldsBut(reflect.TypeOf(schedv1.UserDeploymentSpec{}), appOutside),
		fieldsBut(reflect.TypeOf(schedv1.ServiceSpec{}), serviceOutside)
}

func fieldsBut(t reflect.Type, outside []string) []string {
	var out []string
	for i := range t.NumField() {
		if name := jsonName(t.Field(i)); !slices.Contains(outside, name) {
			out = append(out, name)
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// carry copies the fields named in outside from src to dst (both pointers
// to the same struct type).
func carry(dst, src any, outside []string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range d.NumField() {
		if slices.Contains(outside, jsonName(d.Type().Field(i))) {
			d.Field(i).Set(s.Field(i))
		}
	}
}

// Of is the template of ud: what a revision of it records.
func Of(ud *schedv1.UserDeployment) Template {
	t := Template{Spec: *ud.Spec.DeepCopy()}
	carry(&t.Spec, &schedv1.UserDeploymentSpec{}, appOutside)
	for i := range t.Spec.Services {
		carry(&t.Spec.Services[i], &schedv1.ServiceSpec{}, serviceOutside)
	}
	if h := ud.Annotations[schedv1.AnnotationSecretHash]; h != "" {
		t.Metadata = &Metadata{Annotations: map[string]string{schedv1.AnnotationSecretHash: h}}
	}
	return t
}

// Encode is the data of a revision of t.
func Encode(t Template) []byte {
	data, err := json.Marshal(t)
	if err != nil {
		// Marshalling API types does not fail.
		panic(fmt.Sprintf("encode a revision: %v", err))
	}
	return data
}

// Hash is the hash of t that its revision's LabelRevisionHash carries: 16
// hex digits of the SHA-256 of its data. Two templates with the same hash
// make the same pods.
func Hash(t Template) string { return hashData(Encode(t)) }

func hashData(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// Name is the name of revision n of app.
func Name(app string, n int64) string { return app + ".v" + strconv.FormatInt(n, 10) }

// Number is the revision number in name, a revision of app; false when
// name is not one.
func Number(app, name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, app+".v")
	if !ok || digits == "" || digits[0] == '0' || len(digits) > 11 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n <= MaxNumber
}

// Labels are the labels of ud's revision of hash: the operator's, the
// app's, and the hash.
func Labels(app, hash string) map[string]string {
	return map[string]string{
		schedv1.LabelManagedBy:      schedv1.ManagedByValue,
		schedv1.LabelUserDeployment: app,
		schedv1.LabelRevisionHash:   hash,
	}
}

// New is revision n of ud, recording t, changed by manager ("" when not
// known).
func New(ud *schedv1.UserDeployment, n int64, t Template, manager string) *appsv1.ControllerRevision {
	data := Encode(t)
	cr := &appsv1.ControllerRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(ud.Name, n),
			Namespace:       ud.Namespace,
			Labels:          Labels(ud.Name, hashData(data)),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, schedv1.GroupVersion.WithKind("UserDeployment"))},
		},
		Revision: n,
	}
	cr.Data.Raw = data
	if manager != "" {
		cr.Annotations = map[string]string{schedv1.AnnotationChangedBy: manager}
	}
	return cr
}

// Check says why cr is not a revision the operator made for the app ud, or
// "" when, from its metadata, it is: controlled by the app (its UID),
// labelled for it with a hash, named <app>.v<N> and numbered N. It reads
// only what a cache of metadata keeps; Read checks the data.
func Check(cr *appsv1.ControllerRevision, ud metav1.Object) string {
	ref := metav1.GetControllerOfNoCopy(cr)
	l := cr.Labels
	switch {
	case cr.Namespace != ud.GetNamespace():
		return "in another namespace"
	case ref == nil || ref.UID != ud.GetUID() || ref.Kind != "UserDeployment" || ref.APIVersion != schedv1.GroupVersion.String():
		return "not controlled by this UserDeployment"
	case l[schedv1.LabelManagedBy] != schedv1.ManagedByValue || l[schedv1.LabelUserDeployment] != ud.GetName() || !isHash(l[schedv1.LabelRevisionHash]):
		return "not labelled as one of its revisions"
	}
	if n, ok := Number(ud.GetName(), cr.Name); !ok || n != cr.Revision {
		return fmt.Sprintf("not named %s for its revision number %d", Name(ud.GetName(), cr.Revision), cr.Revision)
	}
	return ""
}

func isHash(s string) bool {
	return len(s) == 16 && strings.Trim(s, "0123456789abcdef") == ""
}

// ErrUntrusted wraps why a revision's data cannot be used.
var ErrUntrusted = errors.New("not a revision of this app")

// Read is the template cr records, once Check passed: its data at most
// MaxData bytes, decoded strictly (no unknown or duplicate field), holding
// nothing a revision leaves out, and hashing to its label.
func Read(cr *appsv1.ControllerRevision) (Template, error) {
	data := cr.Data.Raw
	if len(data) == 0 && cr.Data.Object != nil {
		var err error
		if data, err = json.Marshal(cr.Data.Object); err != nil {
			return Template{}, fmt.Errorf("%w: %v", ErrUntrusted, err)
		}
	}
	if len(data) > MaxData {
		return Template{}, fmt.Errorf("%w: its data has %d bytes, more than the %d an app's can have", ErrUntrusted, len(data), MaxData)
	}
	var t Template
	strict, err := sigsjson.UnmarshalStrict(data, &t)
	if err != nil {
		return Template{}, fmt.Errorf("%w: its data is not a template: %v", ErrUntrusted, err)
	}
	if len(strict) > 0 {
		return Template{}, fmt.Errorf("%w: its data is not a template: %v", ErrUntrusted, errors.Join(strict...))
	}
	if !equality.Semantic.DeepEqual(project(t), t) {
		return Template{}, fmt.Errorf("%w: its data holds fields a revision does not record", ErrUntrusted)
	}
	// The hash of what it decodes to, encoded as the operator encodes it:
	// the same bytes for data the operator wrote, whatever a client or the
	// API server did to its spaces or its keys' order on the way.
	if h := Hash(t); h != cr.Labels[schedv1.LabelRevisionHash] {
		return Template{}, fmt.Errorf("%w: its data does not hash to its label %s (%s)", ErrUntrusted, schedv1.LabelRevisionHash, h)
	}
	return t, nil
}

// project is t with only what a revision records.
func project(t Template) Template {
	ud := &schedv1.UserDeployment{Spec: t.Spec}
	if h := t.SecretHash(); h != "" {
		ud.Annotations = map[string]string{schedv1.AnnotationSecretHash: h}
	}
	return Of(ud)
}

// Notes say what Restore left as it was: services the app has that the
// revision does not, and the revision's services the app no longer has.
type Notes struct {
	Kept, NotRestored []string
}

// Restore is spec with t's template restored: the services both have get
// t's template fields and keep their replicas, exposure, ingress path and
// volumes; the spec's other services are kept as they are, and t's
// services that the spec no longer has are not added back (Notes); the
// app's template fields (config, secrets, placement and any other) are
// t's, its other fields the spec's. Secret values live in a Secret, not in
// a revision: whoever restores keeps the current secret hash.
func Restore(spec schedv1.UserDeploymentSpec, t Template) (schedv1.UserDeploymentSpec, Notes) {
	out := *t.Spec.DeepCopy()
	carry(&out, &spec, appOutside)
	var notes Notes
	from := map[string]*schedv1.ServiceSpec{}
	for i := range out.Services {
		from[out.Services[i].Name] = &out.Services[i]
	}
	services := make([]schedv1.ServiceSpec, 0, len(spec.Services))
	for _, cur := range spec.Services {
		r, ok := from[cur.Name]
		if !ok {
			services = append(services, *cur.DeepCopy())
			notes.Kept = append(notes.Kept, cur.Name)
			continue
		}
		s := *r.DeepCopy()
		carry(&s, &cur, serviceOutside)
		services = append(services, s)
		delete(from, cur.Name)
	}
	for _, s := range out.Services {
		if _, ok := from[s.Name]; ok {
			notes.NotRestored = append(notes.NotRestored, s.Name)
		}
	}
	out.Services = services
	return out, notes
}

// Equal reports whether a and b make the same pods but for the secret
// hash, which a rollback cannot restore.
func Equal(a, b Template) bool {
	a.Metadata, b.Metadata = nil, nil
	return Hash(a) == Hash(b)
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
