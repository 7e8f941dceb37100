package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// ErrRefused means a destination is not allowed: a link-local or cloud-metadata address, or a
// destination outside the allow-list. Test it with errors.Is.
var ErrRefused = errors.New("destination refused")

// blocked are never connected to, allow-list or not: link-local ranges, which hold the cloud
// metadata services (169.254.169.254, fd00:ec2::254 on AWS Nitro), and AWS's IPv6 metadata address.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// Policy says which destinations outbound calls may reach. The zero value (and nil) allows every
// destination but the blocked ones. It is immutable and safe for concurrent use.
type Policy struct {
	names    []string       // exact host names, lower case
	suffixes []string       // ".example.com" for "*.example.com"
	prefixes []netip.Prefix // IPs (as /32 or /128) and CIDR ranges
}

// NewPolicy returns a Policy allowing only the destinations in allow (none: every destination but
// the blocked ones). Entries are host names ("hooks.slack.com"), wildcard suffixes
// ("*.svc.cluster.local", matching any name below it), IP addresses or CIDR ranges. A host name
// matches the URL's host; an IP or range matches the address the name resolves to.
// errors: an entry that is none of these.
func NewPolicy(allow []string) (*Policy, error) {
	p := &Policy{}
	for _, raw := range allow {
		e := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case e == "":
			continue
		case strings.Contains(e, "/"):
			pfx, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("allowed destination %q: %w", raw, err)
			}
			p.prefixes = append(p.prefixes, pfx.Masked())
		case strings.HasPrefix(e, "*."):
			if !validName(e[2:]) {
				return nil, fmt.Errorf("allowed destination %q is not a host name pattern", raw)
			}
			p.suffixes = append(p.suffixes, e[1:])
		default:
			if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				ip = ip.Unmap()
				p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			if !validName(e) {
				return nil, fmt.Errorf("allowed destination %q is not a host name, IP address or CIDR range", raw)
			}
			p.names = append(p.names, e)
		}
	}
	return p, nil
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
// ip itself). errors: ErrRefused naming ip and why.
func (p *Policy) CheckAddr(host string, ip netip.Addr) error {
	// The zone of a scoped IPv6 address (fe80::1%eth0) names an interface, not another address:
	// netip.Prefix.Contains never matches a zoned address, so drop it before matching.
	ip = ip.Unmap().WithZone("")
	for _, b := range blocked {
		if b.Contains(ip) {
			return fmt.Errorf("%w: %s is a link-local or cloud-metadata address, which Sluice never calls", ErrRefused, ip)
		}
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
	if host != "" && host != ip.String() {
		return fmt.Errorf("%w: %s (%s) is not on the allowed destinations", ErrRefused, host, ip)
	}
	return fmt.Errorf("%w: %s is not on the allowed destinations", ErrRefused, ip)
}

// CheckURL refuses what the URL alone shows to be refused, without resolving or dialing: a URL
// that is not absolute http(s), a literal IP address CheckAddr refuses, or a host name the
// allow-list can never admit (no name matches and it has no IP ranges a resolved address could
// fall in). A nil error does not promise the call is allowed: a name is checked again on each
// address it resolves to. Messages name the host only, never the URL (whose path may hold a
// credential). errors: ErrRefused, or an invalid URL.
func (p *Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http:// or https:// URL")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, ip)
	}
	if p.restricted() && !p.allowsName(host) && len(p.prefixes) == 0 {
		return fmt.Errorf("%w: %s is not on the allowed destinations", ErrRefused, host)
	}
	return nil
}

// String lists the allow-list, for logs.
func (p *Policy) String() string {
	if !p.restricted() {
		return "any destination but link-local and cloud-metadata addresses"
	}
	var parts []string
	parts = append(parts, p.names...)
	for _, s := range p.suffixes {
		parts = append(parts, "*"+s)
	}
	for _, pfx := range p.prefixes {
		parts = append(parts, pfx.String())
	}
	return strings.Join(parts, ",")
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
