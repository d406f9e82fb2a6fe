// Package config embeds the manifests in this folder so that
// `kubectl sched install` applies exactly what `kubectl apply -k
// config/default` would: the generated CRDs, the admission policy, the
// operator's RBAC and its Deployment. Kustomization files are embedded too and skipped by readers.
package config

import "embed"

// Manifests holds crd/bases/*.yaml, policy/*.yaml, rbac/*.yaml and manager/*.yaml,
// and policy/optional/*.yaml, which install adds when their API is served.
//
//go:embed crd/bases/*.yaml policy/*.yaml policy/optional/*.yaml rbac/*.yaml manager/*.yaml
var Manifests embed.FS
