package templates

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// Shared templates in the cluster are ConfigMaps with this label set to
// "true", holding the template under ConfigMapKey. Users label them, so the
// key is outside sched.kubectl-sched.dev/, which only the operator may set.
const (
	LabelTemplate = "kubectl-sched.dev/template"
	ConfigMapKey  = "template.yaml"
	// SystemNamespace holds templates shared with the whole cluster.
	SystemNamespace = schedv1.DefaultOperatorNamespace
)

// SourceCatalog is the Source of built-in templates.
const SourceCatalog = "catalog"

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Catalog returns the built-in templates, sorted by name. They are
// validated by the package's tests, so an error here is a bug.
var Catalog = sync.OnceValues(func() ([]*Template, error) {
	entries, err := fs.ReadDir(catalogFS, "catalog")
	if err != nil {
		return nil, err
	}
	var out []*Template
	for _, e := range entries {
		data, err := catalogFS.ReadFile(path.Join("catalog", e.Name()))
		if err != nil {
			return nil, err
		}
		t, err := Parse(data, SourceCatalog)
		if err != nil {
			return nil, fmt.Errorf("catalog/%s: %w", e.Name(), err)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Template) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
})

// Source finds templates; see the package documentation for the order.
type Source struct {
	// Dirs are folders of templates, searched first.
	Dirs []string
	// Client reads shared templates from ConfigMaps; nil skips the cluster.
	Client client.Reader
	// Namespace is the current namespace. Its templates come last, after
	// SystemNamespace's and the catalog's, and never take a name those have.
	Namespace string
	// TolerateUnreachable uses the other sources, with a warning, when the
	// cluster cannot be reached. Commands that need the cluster anyway
	// leave it false, so they fail at once with the right exit code.
	TolerateUnreachable bool
	// Warn receives notes about sources that were skipped and templates
	// that were ignored; may be nil.
	Warn func(string)
}

// The places templates come from, in resolution order.
type place int

const (
	placeDir place = iota
	placeSystem
	placeCatalog
	// placeNamespace is last: a namespace's ConfigMaps are written by its
	// users, and a name they choose must not replace, for anyone who reads
	// the namespace, a template the admin or the plugin provides.
	placeNamespace
)

// origin is one place templates come from, in resolution order.
type origin struct {
	place     place
	templates []*Template
	// broken are templates that failed to load, by the name a user would
	// look them up with (file base name or ConfigMap name).
	broken map[string]error
}

// Get finds the template ref names: a path, or a name.
func (s *Source) Get(ctx context.Context, ref string) (*Template, error) {
	if LooksLikePath(ref) {
		return s.getPath(ref)
	}
	var names, skipped []string
	systemRead := s.Client == nil || s.Namespace == SystemNamespace
	for o, err := range s.origins(ctx) {
		if err != nil {
			var se *skippedError
			if errors.As(err, &se) {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", se.what, se.why))
				continue
			}
			return nil, err
		}
		if o.place == placeSystem {
			systemRead = true
		}
		for _, t := range o.templates {
			if t.Name() != ref {
				names = append(names, t.Name())
				continue
			}
			switch {
			case o.place == placeSystem || o.place == placeCatalog:
				s.warnShadow(ctx, t)
			case o.place == placeNamespace && !systemRead:
				s.warn(fmt.Sprintf("template %s comes from %s; the cluster's shared templates (namespace %s) could not be read, so one of that name there would not be seen", ref, t.Origin(), SystemNamespace))
			}
			return t, nil
		}
		if err := o.broken[ref]; err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	hint := fmt.Sprintf("Available templates: %s. 'kubectl sched template list' describes them; a path (./%s.yaml) reads a file.", strings.Join(names, ", "), ref)
	if len(skipped) > 0 {
		hint += " Not searched: " + strings.Join(skipped, "; ") + "."
	}
	return nil, cmdutil.Usage(hint, "unknown template %q", ref)
}

// warnShadow warns when the current namespace holds a template named like
// t, the cluster's or the catalog's, which Get returned instead: whoever
// shared it there may expect it to be used. A failure to read the
// namespace only means no warning.
func (s *Source) warnShadow(ctx context.Context, t *Template) {
	if s.Client == nil || s.Namespace == "" || s.Namespace == SystemNamespace {
		return
	}
	o, err := s.fromCluster(ctx, s.Namespace, placeNamespace)
	if err != nil {
		return
	}
	for _, nt := range o.templates {
		if nt.Name() == t.Name() {
			s.warn(ignored(nt, t))
		}
	}
}

// ignored says that namespace template nt was not used because t, the
// cluster's or the catalog's, has its name.
func ignored(nt, t *Template) string {
	return fmt.Sprintf("ignored template %s from %s: the name is taken by the %s; rename it to use it", nt.Name(), nt.Origin(), t.Origin())
}

// List returns the template each name resolves to, sorted by name.
func (s *Source) List(ctx context.Context) ([]*Template, error) {
	byName := map[string]*Template{}
	place := map[string]place{}
	for o, err := range s.origins(ctx) {
		if err != nil {
			var se *skippedError
			if errors.As(err, &se) {
				s.warn(fmt.Sprintf("not searching %s: %s", se.what, se.why))
				continue
			}
			return nil, err
		}
		for name, err := range o.broken {
			s.warn(fmt.Sprintf("skipped %s: %v", name, err))
		}
		for _, t := range o.templates {
			winner, taken := byName[t.Name()]
			switch {
			case !taken:
				byName[t.Name()], place[t.Name()] = t, o.place
			case o.place == placeNamespace && (place[t.Name()] == placeSystem || place[t.Name()] == placeCatalog):
				s.warn(ignored(t, winner))
			}
		}
	}
	out := make([]*Template, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Template) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (s *Source) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}

// skippedError is a source that could not be read but need not stop the
// search.
type skippedError struct {
	what, why string
	// cluster is true when no namespace can be read.
	cluster bool
}

func (e *skippedError) Error() string { return e.what + ": " + e.why }

// origins yields the sources in resolution order (local folders, the
// cluster's shared templates, the catalog, the current namespace), reading
// each lazily so a name found in a folder costs no request to the cluster.
func (s *Source) origins(ctx context.Context) func(yield func(origin, error) bool) {
	return func(yield func(origin, error) bool) {
		for _, dir := range s.Dirs {
			ts, broken, err := loadDir(dir)
			if !yield(origin{place: placeDir, templates: ts, broken: broken}, err) || err != nil {
				return
			}
		}
		clusterDown := false
		fromCluster := func(ns string, p place) bool {
			if s.Client == nil || clusterDown {
				return true
			}
			o, err := s.fromCluster(ctx, ns, p)
			var se *skippedError
			if errors.As(err, &se) && se.cluster {
				clusterDown = true
			}
			return yield(o, err) && (err == nil || se != nil)
		}
		if !fromCluster(SystemNamespace, placeSystem) {
			return
		}
		ts, err := Catalog()
		if !yield(origin{place: placeCatalog, templates: ts}, err) || err != nil {
			return
		}
		if s.Namespace != "" && s.Namespace != SystemNamespace {
			fromCluster(s.Namespace, placeNamespace)
		}
	}
}

func (s *Source) fromCluster(ctx context.Context, ns string, p place) (origin, error) {
	list := &corev1.ConfigMapList{}
	err := s.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelTemplate: "true"})
	switch {
	case err == nil:
	case apierrors.IsForbidden(err):
		// Reading shared templates is optional: a user who may deploy but
		// not list ConfigMaps still gets the catalog.
		return origin{}, &skippedError{what: "template ConfigMaps in namespace " + ns, why: "forbidden"}
	case s.TolerateUnreachable && cmdutil.Unreachable(err):
		return origin{}, &skippedError{what: "templates in the cluster", why: strings.SplitN(cmdutil.API(err, "list", "configmaps").Error(), "\n", 2)[0], cluster: true}
	default:
		return origin{}, cmdutil.API(err, "list", fmt.Sprintf("configmaps in namespace %s", ns))
	}
	o := origin{place: p, broken: map[string]error{}}
	for _, cm := range list.Items {
		src := fmt.Sprintf("configmap:%s/%s", cm.Namespace, cm.Name)
		data, ok := cm.Data[ConfigMapKey]
		if !ok {
			o.broken[cm.Name] = &InvalidError{Source: src, Problems: []string{"no key " + ConfigMapKey}}
			continue
		}
		t, err := Parse([]byte(data), src)
		if err != nil {
			o.broken[cm.Name] = err
			continue
		}
		o.templates = append(o.templates, t)
	}
	slices.SortFunc(o.templates, func(a, b *Template) int { return strings.Compare(a.Name(), b.Name()) })
	return o, nil
}

// LooksLikePath reports whether a --template reference is a path rather
// than a name.
func LooksLikePath(ref string) bool {
	if ref == "." || ref == ".." || strings.ContainsAny(ref, `/\`) {
		return true
	}
	ext := strings.ToLower(filepath.Ext(ref))
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

func (s *Source) getPath(p string) (*Template, error) {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cmdutil.Usage("Check the path; a name without '/' or .yaml looks the template up in the cluster and the catalog.", "template file %s does not exist", p)
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return loadFile(p)
	}
	ts, broken, err := loadDir(p)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ts) == 1 && len(broken) == 0:
		return ts[0], nil
	case len(ts) == 0 && len(broken) == 1:
		for _, err := range broken {
			return nil, err
		}
	case len(ts) == 0:
		return nil, cmdutil.Usage("Template files end in .yaml, .yml or .json.", "folder %s holds no templates", p)
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.Name())
	}
	for n := range broken {
		names = append(names, n+" (invalid)")
	}
	slices.Sort(names)
	return nil, cmdutil.Usage(fmt.Sprintf("Pick one: --template-dir %s --template NAME.", p),
		"folder %s holds %d templates: %s", p, len(names), strings.Join(names, ", "))
}

func loadFile(p string) (*Template, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxTemplateSize {
		return nil, &InvalidError{Source: "file:" + p, Problems: []string{fmt.Sprintf("larger than %d bytes", maxTemplateSize)}}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return Parse(data, "file:"+p)
}

// loadDir reads the templates of one folder, not its subfolders.
func loadDir(dir string) ([]*Template, map[string]error, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, cmdutil.Usage("--template-dir names a folder of template files.", "cannot read template folder: %v", err)
	}
	var ts []*Template
	broken := map[string]error{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		t, err := loadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			broken[strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))] = err
			continue
		}
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *Template) int { return strings.Compare(a.Name(), b.Name()) })
	return ts, broken, nil
}
