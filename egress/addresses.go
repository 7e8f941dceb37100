package egress

import (
	"net/netip"
)

// class is the kind of a refused address. The zero value is an ordinary address.
type class int

const (
	ordinary    class = iota
	unspecified       // 0.0.0.0/8, ::: on Linux a connection to 0.0.0.0 reaches the host itself
	metadata          // link-local ranges and cloud metadata addresses
	nonUnicast        // multicast, broadcast
	loopback          // 127.0.0.0/8, ::1: opt-in with Loopback
	cluster           // Options.ClusterCIDRs: opt-in with Cluster
)

// never reports whether c is refused in every configuration.
func (c class) never() bool { return c == unspecified || c == metadata || c == nonUnicast }

// describe says what c is, for messages. It names no address.
func (c class) describe() string {
	switch c {
	case unspecified:
		return "an unspecified address, which Sluice never calls"
	case metadata:
		return "a link-local or cloud-metadata address, which Sluice never calls"
	case nonUnicast:
		return "a multicast or broadcast address, which Sluice never calls"
	case loopback:
		return "a loopback address, refused unless the operator allows " + Loopback
	case cluster:
		return "a cluster-internal address, refused unless the operator allows " + Cluster
	}
	return "an ordinary address"
}

// metadataAddrs are cloud metadata and credential services outside the link-local ranges (which
// hold the rest: 169.254.169.254 on AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack, Hetzner and
// others; 169.254.170.2 and 169.254.170.23 for ECS task and EKS pod credentials; 169.254.0.23 on
// Tencent Cloud; 169.254.42.42 on Scaleway).
var metadataAddrs = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"),     // Alibaba Cloud metadata
	netip.MustParsePrefix("168.63.129.16/32"),       // Azure WireServer (host agent, extensions)
	netip.MustParsePrefix("192.0.0.192/32"),         // Oracle Cloud (Classic) metadata
	netip.MustParsePrefix("fd00:ec2::254/128"),      // AWS IMDS over IPv6 (Nitro)
	netip.MustParsePrefix("fd00:ec2::23/128"),       // AWS EKS Pod Identity agent over IPv6
	netip.MustParsePrefix("fd00:ec2::253/128"),      // AWS DNS resolver over IPv6
	netip.MustParsePrefix("fd00:ec2::123/128"),      // AWS time sync over IPv6
	netip.MustParsePrefix("fd20:ce::254/128"),       // GCP metadata over IPv6
	netip.MustParsePrefix("fd00:c1::a9fe:a9fe/128"), // Oracle Cloud metadata over IPv6
	netip.MustParsePrefix("fd00:42::42/128"),        // Scaleway metadata over IPv6
}

var (
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")
	broadcast    = netip.MustParseAddr("255.255.255.255")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known prefix
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215 local-use prefix
	sixToFour    = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo       = netip.MustParsePrefix("2001::/32")       // RFC 4380
	ipv4Compat   = netip.MustParsePrefix("::/96")           // RFC 4291 (deprecated)
	ipv4Translat = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 SIIT
)

// refusedClass is the class for which the policy refuses ip (unmapped, without zone), looking
// at ip and at every IPv4 address embedded in it; ordinary when it refuses none. A class refused in
// every configuration is reported before an opt-in one. embedded reports that the class is that
// of an embedded IPv4 address.
func (p *Policy) refusedClass(ip netip.Addr) (c class, embedded bool) {
	candidates := append([]netip.Addr{ip}, embeddedIPv4(ip)...)
	for i, a := range candidates {
		if ac := p.classOfOne(a); ac.never() {
			return ac, i > 0
		} else if c == ordinary && ac != ordinary && !p.optedIn(ac) {
			c, embedded = ac, i > 0
		}
	}
	return c, embedded
}

// classOfOne is the class of ip alone, ignoring what it may embed.
func (p *Policy) classOfOne(ip netip.Addr) class {
	switch {
	case ip.IsUnspecified() || (ip.Is4() && thisNetwork.Contains(ip)):
		return unspecified
	case ip.IsLinkLocalUnicast() || containedIn(metadataAddrs, ip):
		return metadata
	case ip.IsMulticast() || ip == broadcast:
		return nonUnicast
	case ip.IsLoopback():
		return loopback
	case p != nil && containedIn(p.clusterCIDRs, ip):
		return cluster
	}
	return ordinary
}

func containedIn(prefixes []netip.Prefix, ip netip.Addr) bool {
	for _, pfx := range prefixes {
		if pfx.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries in a standard embedding, which
// a translator, tunnel or the host's own stack may turn into a connection to that IPv4 address:
// IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96, and every RFC 6052
// layout of the local-use 64:ff9b:1::/48), 6to4 (2002:AABB:CCDD::/48), Teredo (the server, and
// the client address stored inverted) and ISATAP (an interface identifier [02]00:5efe:a.b.c.d).
// IPv4-mapped addresses are unmapped before this is called. An IPv4 ip embeds nothing.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(o ...int) netip.Addr { return netip.AddrFrom4([4]byte{b[o[0]], b[o[1]], b[o[2]], b[o[3]]}) }
	var out []netip.Addr
	switch {
	case ipv4Compat.Contains(ip):
		if ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback() {
			out = append(out, v4(12, 13, 14, 15))
		}
	case ipv4Translat.Contains(ip), nat64.Contains(ip):
		out = append(out, v4(12, 13, 14, 15))
	case nat64Local.Contains(ip):
		// RFC 6052 section 2.2: prefix lengths /48, /56, /64 and /96 fit in this /48; bits 64-71
		// (byte 8) are always zero and skipped. The address does not say which length the
		// network uses, so every layout is judged, except where a layout reads the zero padding
		// of a longer one (0.0.0.0/8), which names no host.
		for _, a := range []netip.Addr{v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15)} {
			if !thisNetwork.Contains(a) {
				out = append(out, a)
			}
		}
	case sixToFour.Contains(ip):
		out = append(out, v4(2, 3, 4, 5))
	case teredo.Contains(ip):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		out = append(out, v4(4, 5, 6, 7), client)
	}
	if (b[8] == 0x00 || b[8] == 0x02) && b[9] == 0x00 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(12, 13, 14, 15)) // ISATAP, under any /64
	}
	return out
}
