// Package printing prints objects the way kubectl does: tables built by the
// API server from the CRDs' printer columns, or -o json|yaml|name|jsonpath|
// go-template through cli-runtime's printers. Tables the plugin draws itself
// go through TableWriter, which lays them out as kubectl would.
package printing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// Flags are -o/--output and its companions (--template, --show-managed-fields).
type Flags struct {
	*genericclioptions.PrintFlags
	NoHeaders bool
}

// NewFlags returns printing flags; table output is the default.
func NewFlags() *Flags {
	return &Flags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(kube.Scheme)}
}

// AddFlags registers -o and friends on cmd.
func (f *Flags) AddFlags(cmd *cobra.Command, table bool) {
	f.PrintFlags.AddFlags(cmd)
	if table {
		cmd.Flags().BoolVar(&f.NoHeaders, "no-headers", false, "When using the default or wide output, don't print headers.")
		cmd.Flag("output").Usage = "Output format: json, yaml, name, wide, jsonpath=..., go-template=..., custom... (default: a table)."
	}
}

// IsTable reports whether the output is a table (default or wide).
func (f *Flags) IsTable() bool {
	o := ptr.Deref(f.OutputFormat, "")
	return o == "" || o == "wide"
}

// Validate checks -o: a table, or an output a printer takes; hint says
// which the command takes, for the usage error.
func (f *Flags) Validate(hint string) error {
	if f.IsTable() {
		return nil
	}
	if _, err := f.Printer(); err != nil {
		return cmdutil.Usage(hint, "%v", err)
	}
	return nil
}

// Printer prints objects for non-table output, made safe for a terminal
// (SafePrinter).
func (f *Flags) Printer() (printers.ResourcePrinter, error) {
	p, err := f.ToPrinter()
	if err != nil {
		return nil, err
	}
	return SafePrinter(p), nil
}

// SafePrinter wraps a printer of -o json|yaml|name|jsonpath|go-template so
// that what it writes goes through Text: jsonpath and go-template print
// values raw, and JSON and YAML let C1 and bidirectional controls through.
// In JSON the escape Text writes for those (\u009b) is JSON's own, so the
// output still decodes to the same object.
func SafePrinter(p printers.ResourcePrinter) printers.ResourcePrinter {
	return printers.ResourcePrinterFunc(func(obj runtime.Object, w io.Writer) error {
		var buf bytes.Buffer
		if err := p.PrintObj(obj, &buf); err != nil {
			return err
		}
		_, err := io.WriteString(w, Text(buf.String()))
		return err
	})
}

// IsWide reports whether the output is -o wide.
func (f *Flags) IsWide() bool { return ptr.Deref(f.OutputFormat, "") == "wide" }

// Table asks the API server for a table of the resource, as kubectl get
// does, so the columns are the CRD's printer columns. name may be empty to
// list; namespace empty means all namespaces (or a cluster-scoped kind).
func Table(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, namespace, name, selector string) (*metav1.Table, error) {
	c, err := TableClient(cfg, gvr.GroupVersion())
	if err != nil {
		return nil, err
	}
	req := c.Get().SetHeader("Accept", TableAccept).Resource(gvr.Resource)
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	if name != "" {
		req = req.Name(name)
	}
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	req = req.Param("includeObject", "Object")
	table := &metav1.Table{}
	if err := req.Do(ctx).Into(table); err != nil {
		return nil, err
	}
	return table, nil
}

// tableCodecs decode what a TableClient gets: tables, and the Status of an
// error. client-go's scheme lacks meta.k8s.io's Table, which a watch's
// events need: they are decoded without a typed object to decode into.
var tableCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return serializer.NewCodecFactory(s)
}()

// TableAccept asks the API server for a metav1.Table, as kubectl get does.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// TableClient is the REST client for server-built tables of gv's
// resources, for both Table and get's watch.
func TableClient(cfg *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = tableCodecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// Print writes obj with the chosen non-table printer.
func (f *Flags) Print(obj runtime.Object, w io.Writer) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, w)
}

// Color is whether w should get ANSI colour: only a terminal, and never
// with NO_COLOR set (https://no-color.org).
func Color(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && !strings.EqualFold(os.Getenv("TERM"), "dumb")
}

// NoResources prints the line kubectl prints when nothing matches.
func NoResources(w io.Writer, namespace string) {
	if namespace == "" {
		fmt.Fprintln(w, "No resources found")
		return
	}
	fmt.Fprintf(w, "No resources found in %s namespace.\n", namespace)
}
