package userdeployment

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// buildExternalSecret asks External Secrets to sync one key of the store
// into the Secret <app>-<name>, owned by the ExternalSecret so it goes too.
// A target template, even one that only names the type, keeps External
// Secrets from copying the ExternalSecret's labels onto the Secret: they
// are the operator's reserved labels, which External Secrets' account may
// not set (config/policy/reserved_labels.yaml).
func buildExternalSecret(ud *schedv1.UserDeployment, ref schedv1.SecretReference, store string) *unstructured.Unstructured {
	name := names.ExternalSecret(ud.Name, ref.Name)
	spec := map[string]any{
		"secretStoreRef": map[string]any{"kind": "ClusterSecretStore", "name": store},
		"target":         map[string]any{"name": name, "creationPolicy": "Owner", "template": map[string]any{"type": "Opaque"}},
	}
	if ref.External.Property != "" {
		spec["data"] = []any{map[string]any{
			"secretKey": ref.External.Property,
			"remoteRef": map[string]any{"key": ref.External.Key, "property": ref.External.Property},
		}}
	} else {
		spec["dataFrom"] = []any{map[string]any{"extract": map[string]any{"key": ref.External.Key}}}
	}
	return unstructuredObject(externalSecretGVK, objectMeta(ud, name, ""), spec)
}

// externalSecretsProblem says why external secret references cannot be
// honoured, or "" when they can.
func externalSecretsProblem(s Settings, a apis) string {
	switch {
	case !a.externalSecrets:
		return "the cluster does not serve external-secrets.io/v1 ExternalSecrets (install External Secrets; the service starts once it is served, without restarting the operator)"
	case s.ClusterSecretStore == "":
		return "the operator has no ClusterSecretStore configured (--cluster-secret-store)"
	}
	return ""
}

// externalKeyProblem says why an app in ns may not read key from the shared
// store, or "" when it may: keys start with the namespace's prefix, no ".."
// segment climbs out of it, and the prefix covers no reserved path (a
// namespace named like the store's mount would reach every key, as External
// Secrets strips the mount from a key that starts with it).
func externalKeyProblem(ns, key, template string, reserved []string) string {
	if template == "" {
		return ""
	}
	prefix := secretstore.Prefix(template, ns)
	if r := secretstore.Covered(prefix, reserved); r != "" {
		return fmt.Sprintf("namespace %s may not read the shared store: its part, %q, would cover %q, which the store keeps for itself or for shared secrets (the operator's --external-secret-reserved-paths); a cluster admin must move the app to another namespace", ns, prefix, r)
	}
	if secretstore.Outside(key, prefix) {
		return fmt.Sprintf("key %q is outside this namespace's part of the secret store: external keys must start with %q (the operator's --external-secret-key-template)", key, prefix)
	}
	return ""
}

// servicesOf lists the services that receive a secret: those named, or all.
func servicesOf(ud *schedv1.UserDeployment, ref schedv1.SecretReference) []string {
	if len(ref.Services) > 0 {
		return ref.Services
	}
	out := make([]string, 0, len(ud.Spec.Services))
	for _, s := range ud.Spec.Services {
		out = append(out, s.Name)
	}
	return out
}

// receivesSecrets reports whether any secret reference reaches the service.
func receivesSecrets(ud *schedv1.UserDeployment, service string) bool {
	return slices.ContainsFunc(ud.Spec.Secrets, func(ref schedv1.SecretReference) bool {
		return slices.Contains(servicesOf(ud, ref), service)
	})
}
