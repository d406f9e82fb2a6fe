package set

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appedit"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

const imageExamples = `  # Run nginx:1.28 in the web service of app shop
  kubectl sched set image shop web=nginx:1.28

  # Two services at once, and wait until the app runs them
  kubectl sched set image shop web=nginx:1.28 api=ghcr.io/example/shop-api:1.5.0 --wait

  # See the app as it would be, without changing it
  kubectl sched set image shop web=nginx:1.28 --dry-run=client -o yaml`

type imageOptions struct {
	appedit.Options
	// images are SERVICE=IMAGE, in the order given.
	images [][2]string
	args   []string
}

func newImageCommand(c kube.ClientOptions) *cobra.Command {
	o := &imageOptions{Options: appedit.Options{ClientOptions: c}}
	cmd := &cobra.Command{
		Use:   "image APP SERVICE=IMAGE...",
		Short: "Change the image of services of an app",
		Long: `Set image sets spec.services[].image of the UserDeployment for each
SERVICE=IMAGE, with server-side apply as field manager kubectl-sched, and
keeps the rest of the app. The operator then rolls the service's pods to the
new image.`,
		Example:           imageExamples,
		Args:              cmdutil.ArgsTaking(2, math.MaxInt, "APP SERVICE=IMAGE..."),
		ValidArgsFunction: appedit.Complete(&o.ClientOptions, appedit.Completion{Suffix: "="}),
		RunE:              cmdutil.RunE(o),
	}
	o.AddFlags(cmd)
	return cmd
}

func (o *imageOptions) Complete(cmd *cobra.Command, args []string) error {
	o.args = args[1:]
	return o.Options.Complete(cmd, args)
}

func (o *imageOptions) Validate() error {
	const hint = "Write SERVICE=IMAGE, for example web=nginx:1.28."
	for _, a := range o.args {
		svc, image, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			return cmdutil.Usage(hint, "bad argument %q: want SERVICE=IMAGE", printing.Line(a))
		case svc == "" || image == "":
			return cmdutil.Usage(hint, "bad argument %q: both the service and the image are needed", printing.Line(a))
		case strings.ContainsFunc(image, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return cmdutil.Usage(hint, "bad image %q: an image reference has no spaces or control characters", printing.Line(image))
		case slices.ContainsFunc(o.images, func(p [2]string) bool { return p[0] == svc }):
			return cmdutil.Usage("Give each service once.", "service %q is given twice", printing.Line(svc))
		}
		o.images = append(o.images, [2]string{svc, image})
	}
	return o.Options.Validate()
}

func (o *imageOptions) Run(ctx context.Context) error {
	var before map[string]string
	ud, _, err := o.Change(ctx, func(a *appedit.App) (map[string]appedit.Edit, error) {
		before = map[string]string{}
		edits := map[string]appedit.Edit{}
		for _, p := range o.images {
			svc, err := a.Service(p[0])
			if err != nil {
				return nil, err
			}
			for _, s := range a.UD.Spec.Services {
				if s.Name == svc {
					before[svc] = s.Image
				}
			}
			image := p[1]
			edits[svc] = func(live, applied map[string]any) error {
				live["image"], applied["image"] = image, image
				return nil
			}
		}
		return edits, nil
	})
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range o.images {
		what := "image updated to"
		if before[p[0]] == p[1] {
			what = "already runs"
		}
		lines = append(lines, fmt.Sprintf("%s service %s %s %s", appedit.Ref(o.Name), p[0], what, printing.Line(p[1])))
	}
	return o.Report(ctx, ud, lines...)
}
