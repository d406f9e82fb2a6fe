package userdeployment

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// The host rules are pure functions of the host, the app's namespace, the
// operator's settings and the namespace's allow-list, so the admission
// policy config/policy/ingress_hosts.yaml can say the same at apply time;
// the operator checks them itself, since a policy may be missing.

// hostProblem says why an app in namespace ns may not route host, or ""
// when it may. Under the ingress domain an app routes only
// <label>.<ns>.<domain>: the namespace owns its part of the domain, so no
// other namespace can take an app's default host, not even before the app
// exists. Outside the domain only the namespace's allow-list counts.
func hostProblem(host, ns, domain string, allowed []string) string {
	problem, outside := domainProblem(host, ns, domain)
	if problem != "" || !outside || allowListed(strings.ToLower(host), allowed) {
		return problem
	}
	list := "empty"
	if len(allowed) > 0 {
		list = strings.Join(allowed, ", ")
	}
	return fmt.Sprintf("host %s is outside the ingress domain %s and not in namespace %s's allow-list (%s): a cluster admin can add it to the namespace's annotation %s, or use a host %s",
		host, normalDomain(domain), ns, list, schedv1.AnnotationAllowedHosts, slotOf(ns, domain))
}

// domainProblem is hostProblem without the allow-list: what no allow-list
// can allow, and whether host is outside the domain (then only an
// allow-list entry lets the app route it).
func domainProblem(host, ns, domain string) (problem string, outside bool) {
	host, domain = strings.ToLower(host), normalDomain(domain)
	slot := slotOf(ns, domain)
	switch {
	case strings.Contains(host, "*"):
		return fmt.Sprintf("host %s is a wildcard; an app routes exactly one host: use a host %s, or leave spec.ingress.host empty for the app's default", host, slot), false
	case net.ParseIP(host) != nil:
		return fmt.Sprintf("host %s is an IP address; ingress hosts are DNS names", host), false
	case len(validation.IsDNS1123Subdomain(host)) > 0 || !strings.Contains(host, "."):
		return fmt.Sprintf("host %q is not a DNS name of at least two labels", host), false
	case underDomain(host, domain):
		if label, ok := strings.CutSuffix(host, "."+ns+"."+domain); ok && label != "" && !strings.Contains(label, ".") {
			return "", false
		}
		return fmt.Sprintf("host %s is under the ingress domain %s, where apps of namespace %s may only route %s (one DNS label, then their own namespace): use such a host, or leave spec.ingress.host empty for the app's default", host, domain, ns, slot), false
	}
	return "", true
}

func slotOf(ns, domain string) string {
	return fmt.Sprintf("<label>.%s.%s", ns, normalDomain(domain))
}

// normalDomain is the ingress domain as hosts are compared with it.
func normalDomain(domain string) string {
	return strings.TrimSuffix(strings.ToLower(domain), ".")
}

// underDomain reports whether host is the domain or below it.
func underDomain(host, domain string) bool {
	domain = normalDomain(domain)
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

// parseAllowedHosts reads a namespace's allow-list annotation: exact hosts
// and *.suffix patterns, comma-separated. Malformed entries are dropped, so
// a typo allows nothing. The admission policy reads it the same way.
func parseAllowedHosts(annotation string) []string {
	var out []string
	for _, e := range strings.Split(strings.ToLower(annotation), ",") {
		e = strings.TrimSpace(e)
		name := strings.TrimPrefix(e, "*.")
		if len(validation.IsDNS1123Subdomain(name)) == 0 && strings.Contains(name, ".") && net.ParseIP(name) == nil && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// allowListed reports whether an allow-list entry covers host: the same
// host, or *.suffix for a host below suffix (at any depth).
func allowListed(host string, allowed []string) bool {
	for _, e := range allowed {
		if suffix, ok := strings.CutPrefix(e, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == e {
			return true
		}
	}
	return false
}

// classProblem says why an app may not use ingressClassName class, or ""
// when it may: the operator's own class, or one the admin allowed.
func classProblem(class string, s Settings) string {
	if class == "" || class == s.IngressClass || slices.Contains(s.AllowedIngressClasses, class) {
		return ""
	}
	allowed := s.AllowedIngressClasses
	if s.IngressClass != "" {
		allowed = append([]string{s.IngressClass}, allowed...)
	}
	def := "the cluster's default class"
	if s.IngressClass != "" {
		def = s.IngressClass
	}
	return fmt.Sprintf("spec.ingress.className %q is not an ingress class apps may use here (allowed: %s): leave it empty for %s, or ask a cluster admin to add it to --allowed-ingress-classes", class, orNone(allowed), def)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none besides the default"
	}
	return strings.Join(list, ", ")
}

// routeHosts are what a route object serves, as the host index keeps them:
// hosts in lower case, wildcards (*.example.com) as written, and host
// regular expressions apart.
type routeHosts struct {
	hosts, regexps []string
}

// traefikRuleHosts reads the hosts a Traefik rule matches, conservatively:
// every string argument of a matcher whose name starts with "host" (Host,
// HostHeader, HostSNI, HostRegexp, HostSNIRegexp, in any case, negated or
// not), each one when a matcher takes several (Traefik v2). Strings are Go
// literals, as Traefik parses them: raw in backticks, with backslash
// escapes in double quotes, so no string can hide a matcher. A rule that
// names no host matches every host, like an Ingress rule without one, and
// is not counted: it catches only hosts no other route serves.
func traefikRuleHosts(rule string, into *routeHosts) {
	ident := "" // the identifier just read, outside strings
	spaced := false
	matcher := "" // the host matcher whose arguments are being read
	for i := 0; i < len(rule); i++ {
		c := rule[i]
		switch {
		case c == '`' || c == '"':
			j := i + 1
			for j < len(rule) && rule[j] != c {
				if c == '"' && rule[j] == '\\' {
					j++
				}
				j++
			}
			arg := rule[i+1 : min(j, len(rule))]
			if c == '"' && j < len(rule) {
				if u, err := strconv.Unquote(rule[i : j+1]); err == nil {
					arg = u
				}
			}
			i = j
			if matcher == "" {
				break
			}
			if strings.Contains(matcher, "regexp") {
				into.regexps = appendNew(into.regexps, arg)
			} else if arg = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(arg)), "."); arg != "" {
				into.hosts = appendNew(into.hosts, arg)
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_':
			if spaced {
				ident = ""
			}
			ident, spaced = ident+string(c), false
			continue
		case c == '(':
			if strings.HasPrefix(strings.ToLower(ident), "host") {
				matcher = strings.ToLower(ident)
			}
		case c == ')':
			matcher = ""
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			spaced = true // Host (`a`) is still a call
			continue
		}
		ident, spaced = "", false
	}
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// v2Variable is a Traefik v2 HostRegexp variable: {name} or {name:regexp}.
var v2Variable = regexp.MustCompile(`\{[^{}:]*(:[^{}]*)?\}`)

// regexpMatches reports whether a Traefik host regular expression may match
// host. It is read both as Traefik v3 reads it (a Go regular expression)
// and as v2 did ({name:regexp} variables in a literal host, anchored), and
// matches when either does; a pattern neither can compile matches nothing,
// as Traefik refuses it too.
func regexpMatches(pattern, host string) bool {
	if re, err := regexp.Compile("(?i)" + pattern); err == nil && re.MatchString(host) {
		return true
	}
	var b strings.Builder
	last := 0
	for _, m := range v2Variable.FindAllStringSubmatchIndex(pattern, -1) {
		b.WriteString(regexp.QuoteMeta(pattern[last:m[0]]))
		if m[2] >= 0 {
			b.WriteString("(?:" + pattern[m[2]+1:m[3]] + ")")
		} else {
			b.WriteString("[^.]+")
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(pattern[last:]))
	re, err := regexp.Compile("(?i)^(?:" + b.String() + ")$")
	return err == nil && re.MatchString(host)
}

// wildcardOf is the Ingress wildcard host that covers host: *.example.com
// for shop.example.com (a wildcard covers exactly one label), "" for a
// single label.
func wildcardOf(host string) string {
	if _, parent, ok := strings.Cut(host, "."); ok {
		return "*." + parent
	}
	return ""
}

// serves reports whether a route object with hosts rh serves host.
func (rh routeHosts) serves(host string) bool {
	if slices.Contains(rh.hosts, host) || (wildcardOf(host) != "" && slices.Contains(rh.hosts, wildcardOf(host))) {
		return true
	}
	return slices.ContainsFunc(rh.regexps, func(p string) bool { return regexpMatches(p, host) })
}
