package app

import (
	"fmt"
	"sort"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
	"github.com/kubectl-sched/kubectl-sched/operator/controlleropts"
	"github.com/kubectl-sched/kubectl-sched/operator/cronworkflow"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
	"github.com/kubectl-sched/kubectl-sched/operator/schedext"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
	"github.com/kubectl-sched/kubectl-sched/operator/tenant"
	"github.com/kubectl-sched/kubectl-sched/operator/userdeployment"
	"github.com/kubectl-sched/kubectl-sched/operator/workflow"
)

// Controller registers one reconciler with the manager.
type Controller func(mgr ctrl.Manager, o Options) error

// controllers is every reconciler the manager can run, one per kind, by the
// name --controllers takes.
var controllers = map[string]Controller{
	"userdeployment": func(mgr ctrl.Manager, o Options) error {
		return (&userdeployment.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("userdeployment-controller"),
			// The status Lease goes beside the leader Lease.
			StatusNamespace: o.operatorNamespace(),
			Settings:        o.Settings,
		}).SetupWithManager(mgr, o.controllerOptions("userdeployment"))
	},
	"schedext": func(mgr ctrl.Manager, o Options) error {
		// Nodes carry the CPU scheduler their kernel runs.
		if err := (&schedext.NodeLabeler{
			Client:    mgr.GetClient(),
			Namespace: o.Settings.SchedulerNamespace,
		}).SetupWithManager(mgr, o.controllerOptions("schedext")); err != nil {
			return err
		}
		return (&schedext.Reconciler{
			Client:            mgr.GetClient(),
			APIReader:         mgr.GetAPIReader(),
			Recorder:          mgr.GetEventRecorder("schedext-controller"),
			Namespace:         o.Settings.SchedulerNamespace,
			Images:            o.Settings.SchedulerImages,
			HelperImage:       o.Settings.HelperImage,
			AllowedRegistries: o.Settings.AllowedSchedulerRegistries,
		}).SetupWithManager(mgr, o.controllerOptions("schedext"))
	},
	"agenttask": func(mgr ctrl.Manager, o Options) error {
		return (&agenttask.Reconciler{
			Client:                mgr.GetClient(),
			APIReader:             mgr.GetAPIReader(),
			Recorder:              mgr.GetEventRecorder("agenttask-controller"),
			PriorityClasses:       o.Settings.PriorityClasses,
			DefaultTTL:            o.Settings.DefaultTTL,
			SucceededPodRetention: o.Settings.SucceededPodRetention,
			Jobs:                  o.jobs,
			Namespace:             o.operatorNamespace(),
		}).SetupWithManager(mgr, o.controllerOptions("agenttask"))
	},
	"tenant": func(mgr ctrl.Manager, o Options) error {
		return (&tenant.Reconciler{
			Client:          mgr.GetClient(),
			Recorder:        mgr.GetEventRecorder("tenant-controller"),
			Namespace:       o.operatorNamespace(),
			PriorityClasses: o.Settings.PriorityClasses,
			NetworkPolicies: o.Settings.NetworkPolicies,
			Platform:        netpol.Platform{IngressNamespace: o.Settings.IngressNamespace, MonitoringNamespace: o.Settings.MonitoringNamespace},
			Serves:          o.serves(),
		}).SetupWithManager(mgr, o.controllerOptions("tenant"))
	},
	"workflow": func(mgr ctrl.Manager, o Options) error {
		return (&workflow.Reconciler{
			Client:             mgr.GetClient(),
			APIReader:          mgr.GetAPIReader(),
			Recorder:           mgr.GetEventRecorder("workflow-controller"),
			DefaultTTL:         o.Settings.DefaultTTL,
			ForbidSelfApproval: o.Settings.ForbidSelfApproval,
			Jobs:               o.jobs,
		}).SetupWithManager(mgr, o.controllerOptions("workflow"))
	},
	"cronworkflow": func(mgr ctrl.Manager, o Options) error {
		return (&cronworkflow.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("cronworkflow-controller"),
			Clock:     o.Clock,
		}).SetupWithManager(mgr, o.controllerOptions("cronworkflow"))
	},
}

// controllerOptions are the options of controller name: its workers, and
// its queue fair across namespaces unless --namespace-fairness=false.
func (o Options) controllerOptions(name string) controller.Options {
	return controlleropts.New(o.Workers(name), o.Settings.NamespaceFairness)
}

// ControllerNames lists the controllers --controllers accepts.
func ControllerNames() []string {
	names := make([]string, 0, len(controllers))
	for n := range controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// setupControllers registers the controllers o.Controllers names, or all.
func setupControllers(mgr ctrl.Manager, o Options) error {
	enabled := o.Controllers
	if len(enabled) == 0 {
		enabled = ControllerNames()
	}
	// One for the AgentTask and Workflow controllers: the Workflow
	// controller creates its steps' Jobs, and the AgentTask controller
	// must know which it is creating.
	o.jobs = &taskjob.Starter{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		PriorityClasses:   o.Settings.PriorityClasses,
		AnnotationDomains: o.Settings.AllowedPodAnnotationDomains,
		ToolsImage:        o.ToolsImage(),
	}
	for _, name := range enabled {
		setup, ok := controllers[name]
		if !ok {
			return fmt.Errorf("unknown controller %q in --controllers; known: %v", name, ControllerNames())
		}
		if err := setup(mgr, o); err != nil {
			return fmt.Errorf("set up the %s controller: %w", name, err)
		}
	}
	return nil
}
