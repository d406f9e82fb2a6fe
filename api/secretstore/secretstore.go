// Package secretstore says which part of a shared external secret store
// (an External Secrets ClusterSecretStore) a namespace may use: the keys
// under its prefix, the key template rendered for it. The operator checks
// apps' secrets[].external with it; `kubectl sched install` validates the
// settings with it and writes them into the admission policy that checks
// every ExternalSecret and PushSecret the same way.
package secretstore

import (
	"fmt"
	"slices"
	"strings"
)

// Placeholder in a key template for the namespace's name.
const Placeholder = "{{namespace}}"

// Prefix is the part of the store namespace ns may use.
func Prefix(template, ns string) string { return strings.ReplaceAll(template, Placeholder, ns) }

// TemplateProblem says what is wrong with a key template, "" when nothing.
// Empty confines nothing (no tenants share the store). Otherwise it must
// hold the placeholder, or every namespace would share one prefix, and end
// in "/": "{{namespace}}" alone would let namespace team read team-b's keys.
func TemplateProblem(t string) string {
	switch {
	case t == "":
		return ""
	case !strings.Contains(t, Placeholder):
		return "must hold " + Placeholder + ", so each namespace gets a part of the store of its own (the default is " + Placeholder + "/)"
	case !strings.HasSuffix(t, "/"):
		return fmt.Sprintf("must end in /, so that no namespace's prefix is the start of another namespace's keys (with %s alone, namespace team could read team-b's); use %q", Placeholder, t+"/")
	}
	return ""
}

// ParsePaths reads a comma-separated list of reserved paths, without empty
// items or surrounding slashes.
func ParsePaths(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.Trim(strings.TrimSpace(p), "/"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Covered is the first reserved path a namespace's prefix would reach, ""
// when none: keys under the prefix could then start with it. A store's
// mount is one (External Secrets strips "<mount>/" from a key that starts
// with it, so namespace "secret" of a store mounted at secret would read
// "secret/<anyone>/..." as "<anyone>/..."), a folder of shared secrets
// another.
func Covered(prefix string, reserved []string) string {
	i := slices.IndexFunc(reserved, func(r string) bool { return strings.HasPrefix(r+"/", prefix) })
	if i < 0 {
		return ""
	}
	return reserved[i]
}

// Outside reports whether key lies outside prefix: it does not start with
// it, or a ".." segment climbs out.
func Outside(key, prefix string) bool {
	return !strings.HasPrefix(key, prefix) || slices.Contains(strings.Split(key, "/"), "..")
}
