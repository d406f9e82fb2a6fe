package requests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// BenchmarkTaskAccountAdmission: what the policy in
// testdata/operator_task_account.yaml (a design evaluated for holding a
// task's Job to the service account the task names, not installed) would
// add to the operator's create of a task's Job. Its params are the
// AgentTasks of the Job's namespace, and the API server evaluates it once
// per task there, so the cost grows with the namespace's tasks: measured
// with 1, 100 and the largest count/agenttasks of the shipped tiers. Each
// size sends the same dry-run create (admission runs in full, nothing is
// stored) as the operator's account, one after another, for a Job its
// task controls (the policy applies) and for the same Job with no owner
// (its match conditions leave it out, every other policy as before);
// printed: the client's wall time per create, median and 90th percentile,
// the API server's CPU time per create (/proc, everything it did then),
// and whether a Job claiming a task that does not exist is admitted (the
// policy cannot tell: each evaluation sees one task).
//
//	go test ./hack/test/bench/requests -run '^$' -bench TaskAccountAdmission -benchtime 1x -timeout 30m
func BenchmarkTaskAccountAdmission(b *testing.B) {
	ctx := context.Background()
	c := admin(b)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	op := operatorClient(b, env.Config, cs)
	policy := filepath.Join("testdata", "operator_task_account.yaml")
	if err := testenv.ApplyFile(ctx, c, policy); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicy{}} {
			obj.SetName("kubectl-sched-operator-task-account")
			_ = c.Delete(context.Background(), obj)
		}
	})
	ns := namespace(b, c, "task-account")
	most := largestTaskCount(b)
	pid, err := testenv.APIServerPID(env.Config.Host)
	if err != nil {
		b.Fatal(err)
	}

	ghost := MakeAgentTask("ghost", ns).Obj()
	ghost.UID = "0b4a2e8c-0000-4000-8000-00000000dead"
	var tasks []*schedv1.AgentTask
	for _, size := range []int{1, 100, most} {
		for i := len(tasks); i < size; i++ {
			task := MakeAgentTask(fmt.Sprintf("t%05d", i), ns).Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
				s.ServiceAccountName = "runner"
			}).Obj()
			if err := c.Create(ctx, task); err != nil {
				b.Fatal(err)
			}
			tasks = append(tasks, task)
		}
		first, last := tasks[0], tasks[len(tasks)-1]
		// The policy's params come from the API server's own cache: wait
		// until it refuses a Job for the newest task as another account.
		poll(b, "the policy to see the newest task", time.Minute, func(ctx context.Context) error {
			err := op.Create(ctx, taskJob(last, "default"), client.DryRunAll)
			if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "only as the service account it names") {
				return nil
			}
			return fmt.Errorf("a Job as another account: %v", err)
		})
		verdict := "admitted"
		if err := op.Create(ctx, taskJob(ghost, "default"), client.DryRunAll); err != nil {
			verdict = "refused: " + err.Error()
		}
		fmt.Printf("task-account admission, %5d tasks in the namespace, a Job claiming a task that does not exist, as another account: %s\n", size, verdict)
		for _, row := range []struct {
			name string
			job  *batchv1.Job
		}{
			{"a task's Job", taskJob(first, "runner")},
			{"a Job of no task", func() *batchv1.Job { j := taskJob(first, "runner"); j.OwnerReferences = nil; return j }()},
		} {
			// Fewer at the largest size, where one create takes seconds.
			sends := 300
			if size > 100 {
				sends = 20
			}
			var took []time.Duration
			cpu0 := testenv.ProcessCPU(pid)
			for range sends {
				start := time.Now()
				if err := op.Create(ctx, row.job.DeepCopy(), client.DryRunAll); err != nil {
					b.Fatalf("%s with %d tasks: %v", row.name, size, err)
				}
				took = append(took, time.Since(start))
			}
			cpu := testenv.ProcessCPU(pid) - cpu0
			slices.Sort(took)
			fmt.Printf("task-account admission, %5d tasks in the namespace, %-17s median %8.2f ms  p90 %8.2f ms  API server CPU %8.2f ms per create (%d creates)\n",
				size, row.name+":", millis(took[len(took)/2]), millis(took[len(took)*9/10]), millis(cpu/time.Duration(sends)), sends)
		}
	}
}

// taskJob is a Job as the operator makes one for task, its pods running as
// account.
func taskJob(task *schedv1.AgentTask, account string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: names.Job(task.Name), Namespace: task.Namespace,
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: task.Name, UID: task.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: account,
			SecurityContext:    podsecurity.Pod(),
			Containers:         []corev1.Container{{Name: "main", Image: "busybox", SecurityContext: podsecurity.Container(nil)}},
		}}},
	}
}

// largestTaskCount is the largest count/agenttasks of the shipped tiers.
func largestTaskCount(b *testing.B) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "tiers.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		b.Fatal(err)
	}
	most := 0
	for _, text := range cm.Data {
		var tier struct {
			Quota map[string]string `json:"quota"`
		}
		if err := yaml.Unmarshal([]byte(text), &tier); err != nil {
			continue
		}
		var n int
		if _, err := fmt.Sscan(tier.Quota["count/agenttasks."+schedv1.GroupVersion.Group], &n); err == nil && n > most {
			most = n
		}
	}
	if most == 0 {
		b.Fatal(errors.New("no tier in config/manager/tiers.yaml bounds count/agenttasks"))
	}
	return most
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
