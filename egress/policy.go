package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// ErrRefused means a destination is not allowed: an address of a refused class (loopback,
// cluster-internal, link-local, cloud metadata, ...) or a destination outside the allow-list. Test
// it with errors.Is.
var ErrRefused = errors.New("destination refused")

// The classes of addresses refused by default that an operator may allow (Options.AllowTo).
const (
	// Loopback is 127.0.0.0/8 and ::1: the manager's own pod, with its mesh proxy's admin ports.
	Loopback = "loopback"
	// Cluster is Options.ClusterCIDRs.
	Cluster = "cluster"
)

// Options configure a Policy. The zero value refuses loopback, unspecified, link-local, cloud
// metadata, multicast and broadcast addresses and allows every other destination.
type Options struct {
	// AllowedDestinations, when not empty, are the only destinations: host names
	// ("hooks.slack.com"), wildcard suffixes ("*.svc.cluster.local", any name below it), IP
	// addresses or CIDR ranges. A host name matches the URL's host; an IP or range matches the
	// address the name resolves to. The list narrows what the refused classes leave: it never
	// admits a refused address, whatever name leads to it.
	AllowedDestinations []string
	// AllowTo names the classes refused by default that are allowed: Loopback, Cluster.
	AllowTo []string
	// ClusterCIDRs are cluster-internal ranges (pod and node ranges; the Service range too when
	// Services are not to be called), refused unless AllowTo has Cluster.
	ClusterCIDRs []string
}

// RefusedError is the refusal of one destination; it wraps ErrRefused. Its message says why
// without naming the address or the host (status and events may show it); the fields are for the
// debug log.
type RefusedError struct {
	// Host is the URL's host (a name, or the address itself); Addr the address refused, invalid
	// when the host name alone decided.
	Host string
	Addr netip.Addr
	why  string
}

func (e *RefusedError) Error() string { return ErrRefused.Error() + ": " + e.why }

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Policy says which destinations outbound calls may reach. A nil Policy is the zero Options'
// policy. It is immutable and safe for concurrent use.
type Policy struct {
	names         []string       // exact host names, lower case
	suffixes      []string       // ".example.com" for "*.example.com"
	prefixes      []netip.Prefix // IPs (as /32 or /128) and CIDR ranges
	clusterCIDRs  []netip.Prefix
	allowLoopback bool
	allowCluster  bool
}

// NewPolicy returns the Policy o describes.
// errors: an allowed destination that is no host name, pattern, IP or CIDR range; a cluster
// range that does not parse; an unknown class.
func NewPolicy(o Options) (*Policy, error) {
	p := &Policy{}
	for _, raw := range o.AllowedDestinations {
		if err := p.addAllowed(raw); err != nil {
			return nil, err
		}
	}
	for _, raw := range o.ClusterCIDRs {
		pfx, err := parseRange(raw)
		if err != nil {
			return nil, fmt.Errorf("cluster range %q: %w", raw, err)
		}
		p.clusterCIDRs = append(p.clusterCIDRs, pfx)
	}
	for _, raw := range o.AllowTo {
		switch strings.ToLower(strings.TrimSpace(raw)) {
		case "":
		case Loopback:
			p.allowLoopback = true
		case Cluster:
			p.allowCluster = true
		default:
			return nil, fmt.Errorf("egress class %q: want %s or %s", raw, Loopback, Cluster)
		}
	}
	return p, nil
}

// addAllowed adds one allow-list entry.
func (p *Policy) addAllowed(raw string) error {
	e := strings.ToLower(strings.TrimSpace(raw))
	switch {
	case e == "":
	case strings.Contains(e, "/"):
		pfx, err := parseRange(e)
		if err != nil {
			return fmt.Errorf("allowed destination %q: %w", raw, err)
		}
		p.prefixes = append(p.prefixes, pfx)
	case strings.HasPrefix(e, "*."):
		if !validName(e[2:]) {
			return fmt.Errorf("allowed destination %q is not a host name pattern", raw)
		}
		p.suffixes = append(p.suffixes, e[1:])
	default:
		if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
			ip = ip.Unmap()
			p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			return nil
		}
		if !validName(e) {
			return fmt.Errorf("allowed destination %q is not a host name, IP address or CIDR range", raw)
		}
		p.names = append(p.names, e)
	}
	return nil
}

// parseRange parses a CIDR range; an IPv4-mapped IPv6 range becomes the IPv4 range it maps.
func parseRange(s string) (netip.Prefix, error) {
	pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, err
	}
	if a := pfx.Addr(); a.Is4In6() && pfx.Bits() >= 96 {
		pfx = netip.PrefixFrom(a.Unmap(), pfx.Bits()-96)
	}
	return pfx.Masked(), nil
}

// optedIn reports whether the operator allowed c.
func (p *Policy) optedIn(c class) bool {
	switch c {
	case ordinary:
		return true
	case loopback:
		return p != nil && p.allowLoopback
	case cluster:
		return p != nil && p.allowCluster
	}
	return false
}

// restricted reports whether an allow-list is in force.
func (p *Policy) restricted() bool {
	return p != nil && len(p.names)+len(p.suffixes)+len(p.prefixes) > 0
}

// allowsName reports whether host (a name, not an IP) is on the allow-list by name.
func (p *Policy) allowsName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range p.names {
		if host == n {
			return true
		}
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// allowsIP reports whether ip is in one of the allow-list's ranges.
func (p *Policy) allowsIP(ip netip.Addr) bool {
	for _, pfx := range p.prefixes {
		if pfx.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckAddr is the verdict on connecting to ip, reached through host (the URL's host: a name, or
// ip itself). An IPv4 address embedded in an IPv6 one is judged as well (see embeddedIPv4), and
// an allow-listed name does not admit an address the classes refuse. errors: *RefusedError.
func (p *Policy) CheckAddr(host string, ip netip.Addr) error {
	// The zone of a scoped IPv6 address (fe80::1%eth0) names an interface, not another address:
	// netip.Prefix.Contains never matches a zoned address, so drop it before matching.
	ip = ip.Unmap().WithZone("")
	if c, embedded := p.refusedClass(ip); c != ordinary {
		why := c.describe()
		if embedded {
			why = "an IPv6 address embedding " + why
		}
		return &RefusedError{Host: host, Addr: ip, why: why}
	}
	if !p.restricted() {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil && p.allowsName(host) {
		return nil
	}
	if p.allowsIP(ip) {
		return nil
	}
	return &RefusedError{Host: host, Addr: ip, why: "not on the allowed destinations"}
}

// CheckURL refuses what the URL alone shows to be refused, without resolving or dialing: a URL
// that is not absolute http(s), a literal IP address CheckAddr refuses, an IPv4 address in a
// non-standard notation (decimal, hex, octal, shortened: resolvers read it as an address), a
// "localhost" name while loopback is refused, or a host name the allow-list can never admit (no
// name matches and it has no IP ranges a resolved address could fall in). A nil error does not
// promise the call is allowed: a name is checked again on each address it resolves to. Messages
// name neither the URL (whose path may hold a credential) nor the host. errors: *RefusedError, or
// an invalid URL.
func (p *Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http:// or https:// URL")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, ip)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case looksNumeric(name):
		return &RefusedError{Host: host, why: "an IP address in a non-standard notation"}
	case (name == "localhost" || strings.HasSuffix(name, ".localhost")) && !p.optedIn(loopback):
		return &RefusedError{Host: host, why: loopback.describe()}
	case p.restricted() && !p.allowsName(host) && len(p.prefixes) == 0:
		return &RefusedError{Host: host, why: "not on the allowed destinations"}
	}
	return nil
}

// looksNumeric reports whether every label of name is a number (decimal, octal, or 0x and hex
// digits), as in "2130706433", "0x7f.1", "127.1" or "0177.0.0.1": C resolvers (inet_aton) read
// such a name as an IPv4 address.
func looksNumeric(name string) bool {
	for _, label := range strings.Split(name, ".") {
		digits := strings.TrimPrefix(label, "0x")
		if digits == "" {
			return false
		}
		hex := len(digits) < len(label)
		for _, r := range digits {
			switch {
			case r >= '0' && r <= '9', hex && r >= 'a' && r <= 'f':
			default:
				return false
			}
		}
	}
	return true
}

// String describes the policy, for logs.
func (p *Policy) String() string {
	refused := "refusing link-local, cloud-metadata, unspecified, multicast and broadcast addresses"
	if !p.optedIn(loopback) {
		refused += ", loopback"
	}
	if p != nil && len(p.clusterCIDRs) > 0 {
		if p.allowCluster {
			refused += "; cluster ranges allowed"
		} else {
			var parts []string
			for _, pfx := range p.clusterCIDRs {
				parts = append(parts, pfx.String())
			}
			refused += ", cluster ranges " + strings.Join(parts, ",")
		}
	}
	if !p.restricted() {
		return refused + "; any other destination"
	}
	var parts []string
	parts = append(parts, p.names...)
	for _, s := range p.suffixes {
		parts = append(parts, "*"+s)
	}
	for _, pfx := range p.prefixes {
		parts = append(parts, pfx.String())
	}
	return refused + "; allowed: " + strings.Join(parts, ",")
}

// validName reports whether s looks like a DNS name (letters, digits, '-', '_' and dots).
func validName(s string) bool {
	if s == "" || net.ParseIP(s) != nil {
		return s != ""
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		default:
			return false
		}
	}
	return true
}
