package revisions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// History is what `history -o json|yaml` prints.
type History struct {
	App       string `json:"app"`
	Namespace string `json:"namespace"`
	// CurrentRevision, LastRunningRevision and RolledBack are the app's
	// status: the spec's revision, the last that ran, the rollback.
	CurrentRevision     int64               `json:"currentRevision,omitempty"`
	LastRunningRevision int64               `json:"lastRunningRevision,omitempty"`
	RolledBack          *schedv1.RolledBack `json:"rolledBack,omitempty"`
	Revisions           []Revision          `json:"revisions"`
}

// Revision is one revision of an app.
type Revision struct {
	Revision int64 `json:"revision"`
	// Name of its ControllerRevision.
	Name    string      `json:"name"`
	Created metav1.Time `json:"created"`
	// ChangedBy is the field manager of the change.
	ChangedBy string `json:"changedBy,omitempty"`
	// Change says what changed from the revision before it.
	Change string `json:"change"`
	// Services that run it.
	Services []string          `json:"services,omitempty"`
	Template revision.Template `json:"template"`
}

// HistoryOptions for `kubectl sched history`.
type HistoryOptions struct {
	kube.NameOptions

	Revision  int64
	Output    string
	NoHeaders bool
	Now       func() time.Time
}

// NewHistoryCommand returns `kubectl sched history`.
func NewHistoryCommand(c kube.ClientOptions) *cobra.Command {
	o := &HistoryOptions{NameOptions: kube.Named(c), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of an app: what its pods ran, who changed it, when",
		Long: `List the revisions of a UserDeployment, oldest first. A revision records what
the app's pods run: each service's image, command, args, env, ports,
resources, probes, pod metadata, security context, service account and
image pull secrets, the app's config, secret references and placement, and
the secrets' values (their hash). Every change to those makes a new one; a
change of replicas, exposure, ingress, state or a restart does not. The
operator keeps the last spec.revisionHistoryLimit (10 by default) as
ControllerRevisions <name>.v<N>.

Each row says when the revision was made, by which field manager (the tool
that changed the app, such as kubectl-sched or kubectl-edit: objects do not
record users), and what changed from the revision before it. A last line
says which revision the spec makes and which the services run. -o wide adds
the ControllerRevision and the services that run each revision; -o json or
yaml prints them with their templates; -o name the ControllerRevisions.
--revision N shows one revision's template.`,
		Example: `  # The revisions of app shop
  kubectl sched history shop

  # What revision 2 ran
  kubectl sched history shop --revision 2

  # For a script: the revision numbers and their changes
  kubectl sched history shop -o json`,
		Args:              cmdutil.NameArg(udKind.Singular),
		ValidArgsFunction: o.CompleteNames(udKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.Int64Var(&o.Revision, "revision", 0, "Show this revision only, with its template.")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: wide, json, yaml or name.")
	f.BoolVar(&o.NoHeaders, "no-headers", false, "Print the table without its header and last line.")
	return cmd
}

// Validate checks the flags.
func (o *HistoryOptions) Validate() error {
	switch o.Output {
	case "", "wide", "json", "yaml", "name":
	default:
		return cmdutil.Usage("Use -o wide, json, yaml or name.", "--output must be wide, json, yaml or name, got %q", o.Output)
	}
	if o.Revision < 0 {
		return cmdutil.Usage("Give a revision number that kubectl sched history lists.", "--revision must be positive, got %d", o.Revision)
	}
	return nil
}

// Run prints the revisions.
func (o *HistoryOptions) Run(ctx context.Context) error {
	ns := o.Clients.Namespace
	h, err := load(ctx, o.Clients.Client, ns, o.Name)
	if err != nil {
		return err
	}
	for _, why := range h.ignored {
		fmt.Fprintf(o.ErrOut, "Warning: ignored ControllerRevision %s\n", printing.Line(why))
	}
	hist := report(h.ud, h.revisions())
	if o.Revision > 0 {
		i := slices.IndexFunc(hist.Revisions, func(r Revision) bool { return r.Revision == o.Revision })
		if i < 0 {
			return cmdutil.Errorf(cmdutil.ExitNotFound, fmt.Sprintf("Its revisions: %s.", h.numbers()),
				"userdeployment %q has no revision %d", o.Name, o.Revision)
		}
		hist.Revisions = hist.Revisions[i : i+1]
	}
	switch o.Output {
	case "json":
		data, err := json.MarshalIndent(hist, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, printing.Text(string(data)))
		return err
	case "yaml":
		data, err := yaml.Marshal(hist)
		if err != nil {
			return err
		}
		_, err = io.WriteString(o.Out, printing.Text(string(data)))
		return err
	case "name":
		for _, r := range hist.Revisions {
			fmt.Fprintf(o.Out, "controllerrevision.apps/%s\n", r.Name)
		}
		return nil
	}
	if o.Revision > 0 {
		return o.printOne(hist.Revisions[0])
	}
	if len(hist.Revisions) == 0 {
		fmt.Fprintf(o.ErrOut, "No revisions of userdeployment %q found: the operator records the first when it reconciles the app; 'kubectl sched version' checks it runs.\n", o.Name)
		return nil
	}
	return o.printTable(hist)
}

// revisions are the entries with the template of the one before each.
func (h *appHistory) revisions() []revisionInput {
	out := make([]revisionInput, 0, len(h.entries))
	for i, e := range h.entries {
		in := revisionInput{entry: e}
		if i > 0 {
			in.prev = &h.entries[i-1].template
		}
		// Back to what an earlier revision ran: say which.
		for j := i - 1; j >= 0; j-- {
			if h.entries[j].hash() == e.hash() {
				in.sameAs = h.entries[j].cr.Revision
				break
			}
		}
		out = append(out, in)
	}
	return out
}

// revisionInput is a revision and what report needs to describe it.
type revisionInput struct {
	entry
	prev   *revision.Template
	sameAs int64
}

// report is the history of ud from its revisions, oldest first.
func report(ud *schedv1.UserDeployment, revs []revisionInput) History {
	r := History{App: ud.Name, Namespace: ud.Namespace, CurrentRevision: ud.Status.CurrentRevision,
		LastRunningRevision: ud.Status.LastRunningRevision, RolledBack: ud.Status.RolledBack, Revisions: []Revision{}}
	for _, in := range revs {
		change := revision.Summary(in.prev, in.template)
		if in.sameAs > 0 {
			change += fmt.Sprintf(" (as revision %d)", in.sameAs)
		}
		rev := Revision{Revision: in.cr.Revision, Name: in.cr.Name, Created: in.cr.CreationTimestamp,
			ChangedBy: in.cr.Annotations[schedv1.AnnotationChangedBy], Change: change, Template: in.template}
		for _, s := range ud.Status.Services {
			if s.Revision == in.cr.Revision {
				rev.Services = append(rev.Services, s.Name)
			}
		}
		r.Revisions = append(r.Revisions, rev)
	}
	return r
}

func (o *HistoryOptions) printTable(h History) error {
	wide := o.Output == "wide"
	t := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.NoHeaders {
		header := []string{"REVISION", "AGE", "CHANGED BY"}
		if wide {
			header = append(header, "NAME", "SERVICES")
		}
		t.Header(append(header, "CHANGE")...)
	}
	for _, r := range h.Revisions {
		row := []string{fmt.Sprint(r.Revision), duration.HumanDuration(o.Now().Sub(r.Created.Time)), printing.OrNone(r.ChangedBy)}
		if wide {
			row = append(row, r.Name, printing.OrNone(strings.Join(r.Services, ",")))
		}
		t.Row(append(row, r.Change)...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if !o.NoHeaders {
		fmt.Fprintln(o.Out, printing.Line(statusLine(h)))
	}
	return nil
}

// statusLine says which revision the spec makes and which the services
// run.
func statusLine(h History) string {
	switch {
	case h.CurrentRevision == 0:
		return "The operator has not reported the spec's revision yet."
	case h.RolledBack != nil && h.RolledBack.FromRevision == h.CurrentRevision:
		return fmt.Sprintf("The spec is revision %d, which did not become Running: the services run revision %d (spec.rollback: OnDegraded).",
			h.CurrentRevision, h.RolledBack.ToRevision)
	}
	var others []string
	running := 0
	for _, r := range h.Revisions {
		switch {
		case r.Revision == h.CurrentRevision:
			running = len(r.Services)
		case len(r.Services) > 0:
			others = append(others, fmt.Sprintf("%s on revision %d", strings.Join(r.Services, ", "), r.Revision))
		}
	}
	if len(others) == 0 && running > 0 {
		return fmt.Sprintf("The spec is revision %d; every service runs it.", h.CurrentRevision)
	}
	if len(others) == 0 {
		return fmt.Sprintf("The spec is revision %d; the services are rolling out to it.", h.CurrentRevision)
	}
	return fmt.Sprintf("The spec is revision %d; still rolling out: %s.", h.CurrentRevision, strings.Join(others, "; "))
}

// printOne shows one revision and its template.
func (o *HistoryOptions) printOne(r Revision) error {
	tmpl, err := yaml.Marshal(r.Template)
	if err != nil {
		return err
	}
	w := printing.NewSafeLines(o.Out)
	fmt.Fprintf(w, "Revision:    %d (ControllerRevision %s)\n", r.Revision, r.Name)
	fmt.Fprintf(w, "Created:     %s (%s ago)\n", r.Created.UTC().Format(time.RFC1123Z), duration.HumanDuration(o.Now().Sub(r.Created.Time)))
	fmt.Fprintf(w, "Changed by:  %s\n", printing.OrNone(r.ChangedBy))
	fmt.Fprintf(w, "Change:      %s\n", r.Change)
	fmt.Fprintf(w, "Services:    %s\n", printing.OrNone(strings.Join(r.Services, ", ")))
	fmt.Fprintln(w, "Template:")
	for _, line := range strings.Split(strings.TrimRight(string(tmpl), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	return w.Close()
}
