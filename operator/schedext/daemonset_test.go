package schedext

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// dsView is the part of a built DaemonSet that the SchedExt decides.
type dsView struct {
	Name, Namespace  string
	Labels, Selector map[string]string
	PodLabels        map[string]string
	PodAnnotations   map[string]string
	Image            string
	Command, Args    []string
	Env              []corev1.EnvVar
	Resources        corev1.ResourceRequirements
	ExpectedOps      string
	HelperImage      string
	NodeSelector     map[string]string
	ExcludedNodes    []string
	Tolerations      []corev1.Toleration
	PullSecrets      []corev1.LocalObjectReference
}

func viewOf(ds *appsv1.DaemonSet) dsView {
	pod := ds.Spec.Template.Spec
	sched, check := container(pod.Containers, ContainerScheduler), container(pod.Containers, ContainerAttachCheck)
	v := dsView{
		Name: ds.Name, Namespace: ds.Namespace, Labels: ds.Labels, Selector: ds.Spec.Selector.MatchLabels,
		PodLabels: ds.Spec.Template.Labels, PodAnnotations: ds.Spec.Template.Annotations,
		Image: sched.Image, Command: sched.Command, Args: sched.Args, Env: sched.Env, Resources: sched.Resources,
		HelperImage: check.Image, NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, PullSecrets: pod.ImagePullSecrets,
	}
	for _, e := range check.Env {
		if e.Name == EnvExpectedOps {
			v.ExpectedOps = e.Value
		}
	}
	if a := pod.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpNotIn {
					v.ExcludedNodes = append(v.ExcludedNodes, f.Values...)
				}
			}
		}
	}
	return v
}

func container(cs []corev1.Container, name string) corev1.Container {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return corev1.Container{}
}

func TestBuildDaemonSet(t *testing.T) {
	own := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelSchedExt: "lavd"}
	// The pods say which scheduler their attach check looks for.
	withScheduler := func(name string) map[string]string {
		return map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelSchedExt: "lavd", schedv1.LabelCPUScheduler: name}
	}
	in := buildInput{Namespace: "scheds", Image: "reg/scx:1", HelperImage: "busybox:1"}
	res := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	cases := map[string]struct {
		scx  *schedv1.SchedExt
		in   buildInput
		want dsView
	}{
		"a well-known scheduler runs by name and expects its ops without scx_": {
			scx: MakeSchedExt("lavd").Scheduler("scx_lavd").NodeSelector(pool, "general").Args("--performance").Env("RUST_LOG", "info").Obj(),
			in:  in,
			want: dsView{
				Name: "scx-lavd", Namespace: "scheds", Labels: own, Selector: map[string]string{schedv1.LabelSchedExt: "lavd"}, PodLabels: withScheduler("scx_lavd"),
				Image: "reg/scx:1", Command: []string{"scx_lavd"}, Args: []string{"--performance"},
				Env: []corev1.EnvVar{{Name: "RUST_LOG", Value: "info"}}, ExpectedOps: "lavd", HelperImage: "busybox:1",
				NodeSelector: map[string]string{pool: "general"},
			},
		},
		"an own image keeps its entrypoint and expects its opsName": {
			scx: MakeSchedExt("lavd").Image("example.com/rusty:2", "rusty").Obj(),
			in:  buildInput{Namespace: "scheds", Image: "example.com/rusty:2", HelperImage: "busybox:1"},
			want: dsView{
				Name: "scx-lavd", Namespace: "scheds", Labels: own, Selector: map[string]string{schedv1.LabelSchedExt: "lavd"}, PodLabels: withScheduler("scx_rusty"),
				Image: "example.com/rusty:2", ExpectedOps: "rusty", HelperImage: "busybox:1",
			},
		},
		"an own image without opsName accepts any attached scheduler, and names none": {
			scx: MakeSchedExt("lavd").Image("example.com/x:2", "").Spec(func(s *schedv1.SchedExtSpec) {
				s.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{schedv1.LabelCPUScheduler: "scx_spoofed"}}
			}).Obj(),
			in: buildInput{Namespace: "scheds", Image: "example.com/x:2", HelperImage: "busybox:1"},
			want: dsView{
				Name: "scx-lavd", Namespace: "scheds", Labels: own, Selector: map[string]string{schedv1.LabelSchedExt: "lavd"}, PodLabels: own,
				Image: "example.com/x:2", ExpectedOps: "", HelperImage: "busybox:1",
			},
		},
		"nodes of older SchedExts are excluded by name, sorted": {
			scx: MakeSchedExt("lavd").Scheduler("scx_lavd").Obj(),
			in:  buildInput{Namespace: "scheds", Image: "reg/scx:1", HelperImage: "busybox:1", Exclude: []string{"n2", "n1"}},
			want: dsView{
				Name: "scx-lavd", Namespace: "scheds", Labels: own, Selector: map[string]string{schedv1.LabelSchedExt: "lavd"}, PodLabels: withScheduler("scx_lavd"),
				Image: "reg/scx:1", Command: []string{"scx_lavd"}, ExpectedOps: "lavd", HelperImage: "busybox:1",
				ExcludedNodes: []string{"n1", "n2"},
			},
		},
		"tolerations, resources, pull secrets and pod metadata pass through; our labels win": {
			scx: MakeSchedExt("lavd").Scheduler("scx_lavd").Toleration(gpuTol).PodAnnotation("a", "b").Spec(func(s *schedv1.SchedExtSpec) {
				s.Resources = schedv1.ResourceRequirements{Limits: res.Limits, Requests: res.Requests}
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
				s.PodMetadata.Labels = map[string]string{"team": "kernel", schedv1.LabelSchedExt: "spoofed", schedv1.LabelCPUScheduler: "scx_spoofed"}
			}).Obj(),
			in: in,
			want: dsView{
				Name: "scx-lavd", Namespace: "scheds", Labels: own, Selector: map[string]string{schedv1.LabelSchedExt: "lavd"},
				PodLabels: map[string]string{"team": "kernel", schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelSchedExt: "lavd",
					schedv1.LabelCPUScheduler: "scx_lavd"},
				PodAnnotations: map[string]string{"a": "b"},
				Image:          "reg/scx:1", Command: []string{"scx_lavd"}, Resources: res, ExpectedOps: "lavd", HelperImage: "busybox:1",
				Tolerations: []corev1.Toleration{gpuTol}, PullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := viewOf(buildDaemonSet(tc.scx, tc.in))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DaemonSet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildDaemonSetPodSafety checks what every scheduler pod needs: a
// privileged loader with bpffs, unprivileged read-only helpers, the attach
// probe, and never two loaders on a node during an update.
func TestBuildDaemonSetPodSafety(t *testing.T) {
	ds := buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").Obj(), buildInput{Namespace: "n", Image: "i", HelperImage: "h"})
	pod := ds.Spec.Template.Spec
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("rolling update %+v: maxSurge must be 0 so a node never runs two loaders", ru)
	}
	if !pod.HostPID || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("hostPID %v, automountServiceAccountToken %v", pod.HostPID, pod.AutomountServiceAccountToken)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 10 {
		t.Errorf("terminationGracePeriodSeconds %v leaves the loader no time to detach", pod.TerminationGracePeriodSeconds)
	}
	sched := container(pod.Containers, ContainerScheduler)
	if sched.SecurityContext == nil || sched.SecurityContext.Privileged == nil || !*sched.SecurityContext.Privileged {
		t.Errorf("scheduler container is not privileged: %+v", sched.SecurityContext)
	}
	if len(sched.VolumeMounts) != 1 || sched.VolumeMounts[0].MountPath != "/sys/fs/bpf" {
		t.Errorf("scheduler mounts %+v, want /sys/fs/bpf", sched.VolumeMounts)
	}
	helpers := append([]corev1.Container{container(pod.Containers, ContainerAttachCheck)}, pod.InitContainers...)
	if len(helpers) != 2 || helpers[1].Name != ContainerPreflight {
		t.Fatalf("want the attach check and one preflight init container, got %+v", helpers)
	}
	for _, h := range helpers {
		sc := h.SecurityContext
		if h.Image != "h" || sc == nil || sc.Privileged != nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: image %s, security context %+v: helpers run the helper image unprivileged", h.Name, h.Image, sc)
		}
		if len(h.VolumeMounts) != 1 || !h.VolumeMounts[0].ReadOnly || h.VolumeMounts[0].MountPath != hostSysKernel {
			t.Errorf("%s mounts %+v, want /sys/kernel read-only", h.Name, h.VolumeMounts)
		}
	}
	probe := container(pod.Containers, ContainerAttachCheck).ReadinessProbe
	if probe == nil || probe.Exec == nil || !cmp.Equal(probe.Exec.Command, []string{"sh", "-c", attachProbeScript}) {
		t.Errorf("attach check has no sched_ext readiness probe: %+v", probe)
	}
	if pod.Affinity != nil {
		t.Errorf("affinity %+v without conflicts", pod.Affinity)
	}
}

func TestTemplateHash(t *testing.T) {
	in := buildInput{Namespace: "n", Image: "i", HelperImage: "h"}
	base := buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").NodeSelector("a", "b").Obj(), in).Annotations[AnnotationTemplateHash]
	if again := buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").NodeSelector("a", "b").Obj(), in).Annotations[AnnotationTemplateHash]; again != base {
		t.Errorf("hash not stable: %s then %s", base, again)
	}
	changed := map[string]*appsv1.DaemonSet{
		"an exclusion":           buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").NodeSelector("a", "b").Obj(), buildInput{Namespace: "n", Image: "i", HelperImage: "h", Exclude: []string{"x"}}),
		"a removed selector key": buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").Obj(), in),
		"an argument":            buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").NodeSelector("a", "b").Args("-v").Obj(), in),
		"the helper image":       buildDaemonSet(MakeSchedExt("s").Scheduler("scx_rusty").NodeSelector("a", "b").Obj(), buildInput{Namespace: "n", Image: "i", HelperImage: "h2"}),
	}
	for what, ds := range changed {
		if ds.Annotations[AnnotationTemplateHash] == base {
			t.Errorf("%s does not change the hash", what)
		}
	}
}

func TestResolveImageAndOps(t *testing.T) {
	images := map[string]string{"scx_lavd": "reg/scx:1"}
	cases := map[string]struct {
		spec      schedv1.SchedulerSource
		wantImage string
		wantOK    bool
		wantOps   string
	}{
		"well-known":            {spec: schedv1.SchedulerSource{Name: "scx_lavd"}, wantImage: "reg/scx:1", wantOK: true, wantOps: "lavd"},
		"unknown":               {spec: schedv1.SchedulerSource{Name: "scx_nope"}, wantOps: "nope"},
		"image with opsName":    {spec: schedv1.SchedulerSource{Image: "x/y:1", OpsName: "rusty"}, wantImage: "x/y:1", wantOK: true, wantOps: "rusty"},
		"image without opsName": {spec: schedv1.SchedulerSource{Image: "x/y:1"}, wantImage: "x/y:1", wantOK: true},
		// A well-known scheduler from another image: the image wins, the
		// name still says which ops attach.
		"well-known from an image":         {spec: schedv1.SchedulerSource{Name: "scx_lavd", Image: "x/scx:v1.0.13"}, wantImage: "x/scx:v1.0.13", wantOK: true, wantOps: "lavd"},
		"unknown name from an image works": {spec: schedv1.SchedulerSource{Name: "scx_new", Image: "x/scx:v2"}, wantImage: "x/scx:v2", wantOK: true, wantOps: "new"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, ok := ResolveImage(tc.spec, images)
			if img != tc.wantImage || ok != tc.wantOK || ExpectedOps(tc.spec) != tc.wantOps {
				t.Errorf("got image %q ok %v ops %q, want %q %v %q", img, ok, ExpectedOps(tc.spec), tc.wantImage, tc.wantOK, tc.wantOps)
			}
		})
	}
}

// TestAttachProbeScript runs the readiness probe's shell against a fake
// /sys/kernel: it passes only while the expected scheduler is attached.
func TestAttachProbeScript(t *testing.T) {
	sh := lookSh(t)
	cases := map[string]struct {
		files    map[string]string // under sys/kernel; nil: no sched_ext directory
		expected string
		wantPass bool
	}{
		"attached with the expected ops":   {files: map[string]string{"sched_ext/state": "enabled\n", "sched_ext/root/ops": "lavd_1.0.6_x86_64_unknown_linux_gnu\n"}, expected: "lavd", wantPass: true},
		"another scheduler attached":       {files: map[string]string{"sched_ext/state": "enabled\n", "sched_ext/root/ops": "rusty_1.1.0\n"}, expected: "lavd"},
		"any scheduler when none expected": {files: map[string]string{"sched_ext/state": "enabled\n", "sched_ext/root/ops": "rusty_1.1.0\n"}, wantPass: true},
		"still enabling":                   {files: map[string]string{"sched_ext/state": "enabling\n", "sched_ext/root/ops": "lavd\n"}, expected: "lavd"},
		"disabled, no ops":                 {files: map[string]string{"sched_ext/state": "disabled\n"}, expected: ""},
		"kernel without sched_ext":         {expected: "lavd"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := fakeSysKernel(t, tc.files)
			cmd := exec.Command(sh, "-c", strings.ReplaceAll(attachProbeScript, hostSysKernel, root))
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), EnvExpectedOps + "=" + tc.expected}
			out, err := cmd.CombinedOutput()
			if pass := err == nil; pass != tc.wantPass {
				t.Errorf("probe passed=%v, want %v (%v: %s)", pass, tc.wantPass, err, out)
			}
		})
	}
}

// TestPreflightScript runs the preflight's shell against a fake /sys/kernel.
func TestPreflightScript(t *testing.T) {
	sh := lookSh(t)
	cases := map[string]struct {
		files    map[string]string
		wantCode int
		wantMsg  string
	}{
		"sched_ext and BTF": {files: map[string]string{"sched_ext/state": "disabled\n", "btf/vmlinux": "x"}},
		"no sched_ext":      {files: map[string]string{"btf/vmlinux": "x"}, wantCode: ExitUnsupported, wantMsg: "sched_ext not supported by this kernel: /sys/kernel/sched_ext is absent"},
		"sched_ext, no BTF": {files: map[string]string{"sched_ext/state": "disabled\n"}, wantCode: ExitUnsupported, wantMsg: "/sys/kernel/btf/vmlinux is absent"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := fakeSysKernel(t, tc.files)
			termLog := filepath.Join(t.TempDir(), "termination-log")
			script := strings.NewReplacer(hostSysKernel, root, "/dev/termination-log", termLog).Replace(preflightScript)
			err := exec.Command(sh, "-c", script).Run()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			msg, _ := os.ReadFile(termLog)
			if code != tc.wantCode || !strings.Contains(string(msg), tc.wantMsg) {
				t.Errorf("exit %d with message %q, want %d with %q", code, msg, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func lookSh(t *testing.T) string {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("this test needs sh on PATH to run the pod's scripts: %v", err)
	}
	return sh
}

// fakeSysKernel writes files (paths under /sys/kernel) into a temporary folder.
func fakeSysKernel(t *testing.T, files map[string]string) string {
	root := filepath.Join(t.TempDir(), "sys", "kernel")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
