// Package revisions implements `kubectl sched history`, which lists an
// app's revisions (api/revision: what its pods ran, each change a new
// one), and `kubectl sched rollback`, which restores one as a new
// revision with server-side apply, as `kubectl rollout undo` does for a
// Deployment.
package revisions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

var udKind = kinds.UserDeployment

// entry is one revision the plugin trusts.
type entry struct {
	cr       *appsv1.ControllerRevision
	template revision.Template
}

func (e entry) hash() string { return e.cr.Labels[schedv1.LabelRevisionHash] }

// appHistory is an app, as read from the API server (managed fields and
// all), and its revisions, oldest first.
type appHistory struct {
	ud      *schedv1.UserDeployment
	entries []entry
	// ignored are ControllerRevisions labelled as the app's that are not
	// revisions of it (revision.Check, revision.Read), with why.
	ignored []string
}

// load reads the app and its revisions. Only ControllerRevisions that the
// operator made for this app count: controlled by its UID, labelled,
// named and numbered for it, with data that is a template hashing to its
// label; the others are listed in ignored.
func load(ctx context.Context, c client.Client, ns, name string) (*appHistory, error) {
	ud := &schedv1.UserDeployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ud); err != nil {
		return nil, cmdutil.API(err, "get", udKind.What(ns, name))
	}
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(ns),
		client.MatchingLabels{schedv1.LabelUserDeployment: name, schedv1.LabelManagedBy: schedv1.ManagedByValue},
		client.HasLabels{schedv1.LabelRevisionHash}); err != nil {
		return nil, cmdutil.API(err, "list", fmt.Sprintf("controllerrevisions.apps in namespace %q", ns))
	}
	h := &appHistory{ud: ud}
	for i := range list.Items {
		cr := &list.Items[i]
		if why := revision.Check(cr, ud); why != "" {
			h.ignored = append(h.ignored, fmt.Sprintf("%s: %s", cr.Name, why))
			continue
		}
		t, err := revision.Read(cr)
		if err != nil {
			h.ignored = append(h.ignored, fmt.Sprintf("%s: %v", cr.Name, err))
			continue
		}
		h.entries = append(h.entries, entry{cr, t})
	}
	slices.SortFunc(h.entries, func(a, b entry) int { return cmp.Compare(a.cr.Revision, b.cr.Revision) })
	return h, nil
}

// find is revision n, or nil.
func (h *appHistory) find(n int64) *entry {
	for i := range h.entries {
		if h.entries[i].cr.Revision == n {
			return &h.entries[i]
		}
	}
	return nil
}

// current is the revision the app's spec makes: the newest whose template
// it is; nil before the operator has recorded it.
func (h *appHistory) current() *entry {
	hash := revision.Hash(revision.Of(h.ud))
	for i := len(h.entries) - 1; i >= 0; i-- {
		if h.entries[i].hash() == hash {
			return &h.entries[i]
		}
	}
	return nil
}

// numbers is the revision numbers, for messages.
func (h *appHistory) numbers() string {
	var n []string
	for _, e := range h.entries {
		n = append(n, fmt.Sprint(e.cr.Revision))
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// nsFlag is " -n NS" for hints when the user named the namespace.
func nsFlag(explicit bool, ns string) string {
	if explicit && ns != "" {
		return " -n " + ns
	}
	return ""
}
