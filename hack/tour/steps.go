package tour

import (
	"path/filepath"
	"slices"
	"time"
)

// Step is one command of the tour: what it shows, the kubectl command, and
// what its output must contain (the e2e test asserts it; the demo shows it).
type Step struct {
	Title    string
	Say      string
	Args     []string // arguments to kubectl
	WantExit int
	Want     []string // substrings of stdout and stderr as written
	// InOrder: Want's strings come in this order, not just somewhere.
	InOrder bool
	// Retry runs the command again, for up to this long, until it prints
	// what Want says (only the last run is shown): for what the cluster
	// does a moment after the step before.
	Retry time.Duration
}

// Steps is the tour, in order. realNode says whether the cluster has the
// real node, where the workflow's containers really run (otherwise kwok
// simulates them). Commands run in the repository's root.
func Steps(realNode bool) []Step {
	const gates = " canary runs only when its when is true (the channel is stable: it is skipped), and the finally step notify runs after the others, whatever happened, with ${workflow.phase}."
	file, say := "workflow.yaml", "On the real node each step's container computes its output; step 1 receives ${steps.0.output.sha}, step 2 ${steps.build.output.image}."+gates+" The watch ends when the workflow does; its exit code says how."
	if !realNode {
		file, say = "workflow-kwok.yaml", "Without the real node kwok simulates the containers; annotations say what each writes. Step 1 receives ${steps.0.output.sha}, step 2 ${steps.build.output.image}."+gates
	}
	workflow := Step{
		Title: "Run a workflow that passes outputs, with a conditional step and a finally step, watched live",
		Say:   say,
		Args:  []string{"sched", "workflow", "run", "-f", tourFile(file), "--watch"},
		Want: []string{"release", "fetch", "build", "report", "Succeeded", "image=registry.example.com/shop:0a8beffc2418",
			`step 3 canary Skipped: when "params.channel == 'canary'" was false`, "finally 0 notify Succeeded", "notified=release Succeeded", "(3/4 steps, 1 skipped; finally 1/1)"},
	}
	var logs []Step
	if realNode {
		logs = append(logs, Step{
			Title: "The logs of real containers, step by step",
			Say:   "kubectl sched logs shows every pod of an app, task or workflow, each line behind where it came from; -f follows.",
			Args:  []string{"sched", "logs", "workflow/release"},
			Want: []string{"[fetch release-0-fetch-", "[build release-1-build-", "] building shop at 0a8beffc2418", "summary=released registry.example.com/shop:0a8beffc2418",
				"[notify release-finally0-notify-", "] release Succeeded: registry.example.com/shop:0a8beffc2418"},
		})
	}
	steps := []Step{
		{
			Title: "Install the API",
			Say:   "CRDs, the admission policy and the operator's RBAC. The operator itself runs as a local process here, with only that RBAC.",
			Args:  []string{"sched", "install", "--without-operator"},
			Want:  []string{"customresourcedefinition.apiextensions.k8s.io/workflows.sched.kubectl-sched.dev"},
		},
		{
			Title: "Deploy a two-service app from the built-in catalog",
			Say:   "web-app renders a UserDeployment (a public web service and an internal API); --wait follows it until it runs.",
			Args:  []string{"sched", "deploy", "shop", "--template", "web-app", "--set", "apiImage=ghcr.io/example/shop-api:1.4.0", "--wait", "--timeout", "2m"},
			Want:  []string{"shop", "http://shop.default." + IngressDomain},
		},
		{
			Title: "Everything kubectl-sched manages, with plain kubectl",
			Say:   "The five kinds share the category sched.",
			Args:  []string{"get", "sched"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/shop", "Running"},
		},
		{
			Title: "Deploy one image, without a template",
			Say:   "A UserDeployment of one public service, web; --port is where the image listens and the URL routes.",
			Args:  []string{"sched", "deploy", "hello", "--image", "nginx:1.27", "--port", "80", "--env", "GREETING=hi", "--wait", "--timeout", "2m"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/hello applied", "URL: http://hello.default." + IngressDomain, "Running (1/1 services ready)"},
		},
		{
			Title: "Change its image, as kubectl set image does",
			Say:   "set image changes the app's spec and keeps the rest of it (here GREETING); the operator rolls the pods.",
			Args:  []string{"sched", "set", "image", "hello", "web=nginx:1.28", "--wait", "--timeout", "2m"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/hello service web image updated to nginx:1.28", "Running (1/1 services ready)"},
		},
		workflow,
		{
			Title: "Steps side by side",
			Say:   "lint and test both depend on fetch and run together; ship waits for both and uses all three outputs.",
			Args:  []string{"sched", "workflow", "run", "-f", tourFile("branches.yaml"), "--watch"},
			Want:  []string{"checks", "lint", "test", "ship", "Succeeded", "shipped=4f2a9c1e7b3d"},
		},
		{
			Title: "Roll one service of the app, as kubectl rollout restart does",
			Args:  []string{"sched", "restart", "shop", "api", "--wait", "--timeout", "2m"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/shop service api restarted", "Running"},
		},
		{
			Title: "Deploy a new version of the API",
			Say:   "Every change to what an app's pods run is a new revision, which the operator records (a restart is not one).",
			Args:  []string{"sched", "deploy", "shop", "--template", "web-app", "--set", "apiImage=ghcr.io/example/shop-api:1.5.0", "--wait", "--timeout", "2m"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/shop applied", "Running (2/2 services ready)"},
		},
		{
			Title: "The app's revisions: when, by which tool, what changed",
			Args:  []string{"sched", "history", "shop"},
			Want:  []string{"first revision: web nginx:1.27, api ghcr.io/example/shop-api:1.4.0", "api: image ghcr.io/example/shop-api:1.4.0 → ghcr.io/example/shop-api:1.5.0", "The spec is revision 2"},
			// The operator reports every service on revision 2 a moment
			// after deploy --wait sees Running.
			Retry: 10 * time.Second,
		},
		{
			Title: "Roll back to the revision before, as kubectl rollout undo does",
			Say:   "It restores revision 1's pod templates with server-side apply, as a new revision 3; the history keeps revision 2.",
			Args:  []string{"sched", "rollback", "shop", "--wait", "--timeout", "2m"},
			Want:  []string{"userdeployment.sched.kubectl-sched.dev/shop rolled back to revision 1: api: image ghcr.io/example/shop-api:1.5.0 → ghcr.io/example/shop-api:1.4.0", "Running (2/2 services ready)"},
		},
		{
			Title: "Scripts can wait on any kind with kubectl itself",
			Args:  []string{"wait", "--for=jsonpath={.status.phase}=Succeeded", "workflow/release", "--timeout=60s"},
			Want:  []string{"workflow.sched.kubectl-sched.dev/release condition met"},
		},
		{
			Title:    "A task that fails, and how the failure is explained",
			Say:      "The simulated container exits 3 and leaves a message; --wait exits 10 (Failed) with the reason.",
			Args:     []string{"sched", "task", "run", "broken", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/exit-code=3", "--annotation", "sim.kubectl-sched.dev/termination-message=database connection refused", "--wait", "--", "sh", "-c", "exit 3"},
			WantExit: 10,
			Want:     []string{"exited with code 3", "database connection refused"},
		},
		{
			Title: "Describe the failed task",
			Args:  []string{"sched", "describe", "agenttask", "broken"},
			Want:  []string{"Failed", "NonZeroExit", "database connection refused"},
		},
		{
			Title: "Load the scx_lavd CPU scheduler on the general node pool",
			Say:   "A SchedExt becomes a DaemonSet on the selected nodes; a node counts as ready only while its kernel reports the scheduler attached (simulated here).",
			Args:  []string{"sched", "schedext", "set", "lavd", "--sched", "scx_lavd", "--nodes", "node.kubectl-sched.dev/pool=general"},
			Want:  []string{"lavd"},
		},
		{
			Title: "Wait until the kernels report it attached",
			Args:  []string{"wait", "--for=condition=Ready", "schedext/lavd", "--timeout=60s"},
			Want:  []string{"schedext.sched.kubectl-sched.dev/lavd condition met"},
		},
		{
			Title: "Per-node scheduler status",
			Args:  []string{"sched", "schedext", "status", "lavd"},
			Want:  []string{"sim-general-a", "attached"},
		},
	}
	// The logs right after the workflow.
	at := slices.IndexFunc(steps, func(s Step) bool { return s.Title == workflow.Title }) + 1
	steps = slices.Insert(steps, at, logs...)
	return append(steps, firstDay(realNode)...)
}

// Tenant is the tour's team namespace and Member its member.
const (
	Tenant = "payments"
	Member = "alice"
)

// firstDay is a tenant's first day: an admin makes the team's namespace,
// and its member, as herself (--as), deploys an app, runs a task and reads
// its logs, runs a workflow, and sees what the team uses of its tier. It
// comes last: the quota controller counts the CRDs only once it has
// discovered them, up to 30s after install.
func firstDay(realNode bool) []Step {
	as := func(args ...string) []string {
		i := slices.Index(args, "--")
		if i < 0 {
			i = len(args)
		}
		return slices.Concat(args[:i], []string{"-n", Tenant, "--as", Member}, args[i:])
	}
	var steps []Step
	task := Step{
		Title: "Her first task",
		Say:   "Without the real node the container is simulated; annotations say what it writes.",
		Args: as("sched", "task", "run", "hello", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/termination-message=greeting=hi",
			"--wait", "--", "sh", "-c", "echo greeting=hi > /dev/termination-log"),
		Want:    []string{"agenttask/hello Succeeded", "greeting=hi"},
		InOrder: true,
	}
	workflow := Step{
		Title: "Her first workflow",
		Args:  as("sched", "workflow", "run", "-f", tourFile("workflow-kwok.yaml"), "--watch"),
		Want:  []string{"Workflow release Succeeded"},
	}
	if realNode {
		steps = append(steps, Step{
			Title: "A tenant's first day: the real node for the free tier",
			Say:   "No installed tier may use the real node's pool; the admin adds it to the free tier's placement.nodePools (the patch is the installed free tier with real added).",
			Args:  []string{"patch", "configmap", "kubectl-sched-tiers", "-n", "kubectl-sched-system", "--patch-file", tourFile("free-tier.yaml")},
			Want:  []string{"configmap/kubectl-sched-tiers patched"},
		})
		task = Step{
			Title: "Her first task, its log followed",
			Say:   "-f streams the container's log, then prints the outputs it wrote to /dev/termination-log.",
			Args: as("sched", "task", "run", "hello", "--image", "busybox:1.36", "--node-pool", "real", "-f", "--",
				"sh", "-c", `echo "hello from $(hostname)"; echo greeting=hi > /dev/termination-log`),
			// Its progress (the first line comes before the pod runs: the
			// phase it is in when the follow starts), the log, its last
			// line, then the outputs.
			Want:    []string{"agenttask/hello ", "hello from hello-", "agenttask/hello Succeeded", "greeting=hi"},
			InOrder: true,
		}
		workflow = Step{
			Title: "Her first workflow, with each step's log",
			Args:  as("sched", "workflow", "run", "-f", tourFile("workflow.yaml"), "--watch", "--logs"),
			Want:  []string{"build | building shop at 0a8beffc2418", "Workflow release Succeeded"},
		}
	}
	create := Step{
		Title: "A tenant's first day: the admin makes the team's namespace",
		Say:   "Tier free, and alice its member: bound to kubectl-sched-tenant, every command of the plugin in that namespace and nothing else.",
		Args:  []string{"sched", "tenant", "create", Tenant, "--tier", "free", "--user", Member},
		Want:  []string{"namespace/payments applied (tier free", "rolebinding.rbac.authorization.k8s.io/kubectl-sched-tenant applied in payments"},
	}
	if realNode {
		create.Title = "The admin makes the team's namespace"
	}
	return append(steps,
		create,
		Step{
			Title: "The operator gives it the free tier's quota",
			Say:   "Creates in the namespace wait until the quota is there and counted (run this again while it is not found).",
			Args:  []string{"wait", "--for=jsonpath={.status.used.count/userdeployments\\.sched\\.kubectl-sched\\.dev}=0", "resourcequota/kubectl-sched-tier", "-n", Tenant, "--timeout=6m"},
			Want:  []string{"resourcequota/kubectl-sched-tier condition met"},
			Retry: 30 * time.Second,
		},
		Step{
			Title: "alice deploys an app",
			Say:   "From here on every command runs as alice (--as alice), who may do in payments what the plugin needs.",
			Args:  as("sched", "deploy", "shop", "--template", "web-app", "--set", "apiImage=ghcr.io/example/shop-api:1.4.0", "--set", "replicas=1", "--wait", "--timeout", "2m"),
			Want:  []string{"http://shop.payments." + IngressDomain, "Running (2/2 services ready)"},
		},
		task,
		workflow,
		Step{
			Title: "What the team uses of its tier",
			Say:   "alice may not list namespaces: tenant list shows hers.",
			Args:  as("sched", "tenant", "list"),
			Want:  []string{"payments", "free"},
		},
	)
}

// tourFile is a file of hack/tour as the commands name it: relative to the
// repository's root, where they run, so the transcript reads the same on
// every machine.
func tourFile(name string) string { return filepath.Join("hack", "tour", name) }
