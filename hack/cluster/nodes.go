package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

const (
	nodesTimeout          = 120 * time.Second
	serviceAccountTimeout = 60 * time.Second
)

// createNodes creates the fake nodes that do not exist yet. Capacity and
// addresses go in the status at creation, as a kubelet registering does;
// kwok's node-initialize stage keeps them.
func createNodes(ctx context.Context, cfg *rest.Config, nodes []Node) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		if n.Name == "" {
			return fmt.Errorf("node %d has no name", i)
		}
		res, err := nodeResources(n)
		if err != nil {
			return err
		}
		labels := map[string]string{
			"type":                   "kwok",
			"kubernetes.io/hostname": n.Name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
		}
		maps.Copy(labels, n.Labels)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        n.Name,
				Labels:      labels,
				Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			},
			Spec: corev1.NodeSpec{Taints: n.Taints},
			Status: corev1.NodeStatus{
				Capacity:    res,
				Allocatable: res,
				Addresses: []corev1.NodeAddress{
					// A loopback address where nothing listens: the API
					// server's log and exec requests to a simulated node
					// fail at once instead of waiting for a dial timeout.
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.1.%d.%d", (i+1)/250, (i+1)%250)},
					{Type: corev1.NodeHostName, Address: n.Name},
				},
			},
		}
		_, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	return nil
}

// waitNodesReady waits until every node is Ready and no longer carries the
// not-ready/unreachable taints (removed by kube-controller-manager's
// node-lifecycle controller), so pods can be scheduled on them.
func (c *Cluster) waitNodesReady(ctx context.Context, cfg *rest.Config, want []string, lg logger) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, nodesTimeout)
	defer cancel()
	var pending []string
	for {
		if err := c.checkAlive(); err != nil {
			return err
		}
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			byName := map[string]*corev1.Node{}
			for i := range list.Items {
				byName[list.Items[i].Name] = &list.Items[i]
			}
			pending = pending[:0]
			for _, name := range want {
				if why := nodeNotReady(byName[name]); why != "" {
					pending = append(pending, name+": "+why)
				}
			}
			if len(pending) == 0 {
				lg.printf("%d nodes Ready", len(want))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			if err != nil {
				pending = append(pending, "listing nodes: "+err.Error())
			}
			slices.Sort(pending)
			logs := []error{
				componentError(c.Dir, "kwok", "(makes nodes Ready)"),
				componentError(c.Dir, "kube-controller-manager", "(removes the not-ready taints)"),
			}
			if c.RealNode != "" {
				logs = append(logs, componentError(c.Dir, "kubelet", "(makes "+c.RealNode+" Ready)"))
			}
			return fmt.Errorf("nodes not ready after %s:\n    %s\n%w", nodesTimeout,
				strings.Join(pending, "\n    "), errors.Join(logs...))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func nodeNotReady(n *corev1.Node) string {
	if n == nil {
		return "not found"
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return "condition Ready is not True"
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return "still has taint " + t.Key
		}
	}
	return ""
}

// waitDefaultServiceAccount waits for default/default, which
// kube-controller-manager creates. Pods cannot be created in a namespace
// before its default ServiceAccount exists.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, serviceAccountTimeout)
	defer cancel()
	for {
		if err := c.checkAlive(); err != nil {
			return err
		}
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			return componentError(c.Dir, "kube-controller-manager",
				fmt.Sprintf("did not create ServiceAccount default/default within %s (last error: %v)", serviceAccountTimeout, err))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// HostPathStorageClass provisions with kube-controller-manager's host-path
// provisioner (--enable-hostpath-provisioner): a directory on the machine
// the cluster runs on, fit for one real node. It is not the default class,
// so a claim that names no class stays unbound, as on a cluster without
// one.
const HostPathStorageClass = "hostpath"

// createStorageClass creates HostPathStorageClass unless it exists.
func createStorageClass(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: HostPathStorageClass},
		Provisioner:       "kubernetes.io/host-path",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class %s: %w", HostPathStorageClass, err)
	}
	return nil
}
