package tenancy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// hostRefusal says why a route of a Canary in namespace ns may not carry host ("": it may).
// Allowed: what the hostname allow-list admits; else a name of ns: <service>.<ns>,
// <service>.<ns>.svc, <service>.<ns>.svc.<cluster domain> (<service> may be the wildcard *), and,
// when shortLocal, a single label (a short name the route's owner resolves in ns). Everything
// else (another namespace's names, wildcards across namespaces, external hosts, a name that is
// not a host name) is refused. Case and a trailing dot do not matter.
func (p RoutePolicy) hostRefusal(ns, host string, shortLocal bool) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h != "*" && validHost(h) != nil {
		return "is not a host name"
	}
	if p.allowsHost(ns, h) {
		return ""
	}
	if h == "*" {
		return "matches every host"
	}
	labels := strings.Split(h, ".")
	wildcard := labels[0] == "*"
	switch {
	case len(labels) == 1 && shortLocal:
		return ""
	case len(labels) == 1:
		return "is a single-label hostname, which names no namespace"
	case len(labels) >= 3 && labels[2] == "svc":
		if labels[1] != ns {
			return fmt.Sprintf("names namespace %s", labels[1])
		}
		if domain := strings.Join(labels[3:], "."); domain != "" && domain != p.domain() {
			return fmt.Sprintf("is outside the cluster domain %s", p.domain())
		}
		return ""
	case wildcard && coversServices(strings.Join(labels[1:], "."), p.domain()):
		return "matches services of every namespace"
	case len(labels) == 2 && !wildcard:
		if labels[1] != ns {
			return fmt.Sprintf("names namespace %s", labels[1])
		}
		return ""
	}
	return fmt.Sprintf("is not a name of namespace %s", ns)
}

// coversServices reports whether *.suffix matches the names of Services of every namespace: suffix
// is svc, or svc.<domain> or one of its parent domains.
func coversServices(suffix, domain string) bool {
	names := "svc." + domain
	return suffix == "svc" || suffix == names || strings.HasSuffix(names, "."+suffix)
}

// allowsHost reports whether the hostname allow-list admits host (a valid host name in lower case,
// no trailing dot; itself possibly a wildcard) for a Canary in namespace ns: "*" admits every
// host, "*.suffix" every host strictly below suffix (a wildcard host too: *.a.suffix and *.suffix
// match only names below suffix), an exact entry only itself.
func (p RoutePolicy) allowsHost(ns, host string) bool {
	for _, a := range p.hostnames {
		if a.namespace != "" && a.namespace != ns {
			continue
		}
		switch {
		case a.pattern == "*":
			return true
		case strings.HasPrefix(a.pattern, "*."):
			suffix := a.pattern[1:] // ".example.com"
			if rest, ok := strings.CutSuffix(host, suffix); ok && rest != "" {
				return true
			}
		case host == a.pattern:
			return true
		}
	}
	return false
}

// validHost reports whether h (lower case) is a DNS name whose first label may be the wildcard *.
func validHost(h string) error {
	name := h
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		name = rest
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%q: %s", h, strings.Join(errs, "; "))
	}
	return nil
}
