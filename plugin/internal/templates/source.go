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
	// Namespace is the current namespace; SystemNamespace is searched after
	// it unless NoSystemNamespace is set.
	Namespace         string
	NoSystemNamespace bool
	// TolerateUnreachable uses the other sources, with a warning, when the
	// cluster cannot be reached. Commands that need the cluster anyway
	// leave it false, so they fail at once with the right exit code.
	TolerateUnreachable bool
	// Warn receives notes about sources that were skipped; may be nil.
	Warn func(string)
}

// origin is one place templates come from, in resolution order.
type origin struct {
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
	for o, err := range s.origins(ctx) {
		if err != nil {
			var se *skippedError
			if errors.As(err, &se) {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", se.what, se.why))
				continue
			}
			return nil, err
		}
		for _, t := range o.templates {
			if t.Name() == ref {
				return t, nil
			}
			names = append(names, t.Name())
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

// List returns the template each name resolves to, sorted by name.
func (s *Source) List(ctx context.Context) ([]*Template, error) {
	byName := map[string]*Template{}
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
			if _, shadowed := byName[t.Name()]; !shadowed {
				byName[t.Name()] = t
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

// origins yields the sources in resolution order, reading each lazily so a
// name found in a folder costs no request to the cluster.
func (s *Source) origins(ctx context.Context) func(yield func(origin, error) bool) {
	return func(yield func(origin, error) bool) {
		for _, dir := range s.Dirs {
			ts, broken, err := loadDir(dir)
			if !yield(origin{templates: ts, broken: broken}, err) || err != nil {
				return
			}
		}
		if s.Client != nil {
			namespaces := []string{s.Namespace}
			if !s.NoSystemNamespace && s.Namespace != SystemNamespace {
				namespaces = append(namespaces, SystemNamespace)
			}
			for _, ns := range namespaces {
				o, err := s.fromCluster(ctx, ns)
				if !yield(o, err) {
					return
				}
				var se *skippedError
				if errors.As(err, &se) && se.cluster {
					break
				}
				if err != nil && se == nil {
					return
				}
			}
		}
		ts, err := Catalog()
		yield(origin{templates: ts}, err)
	}
}

func (s *Source) fromCluster(ctx context.Context, ns string) (origin, error) {
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
	o := origin{broken: map[string]error{}}
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
