package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, o Options) *Policy {
	t.Helper()
	p, err := NewPolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clusterRanges are the pod and node ranges the tests configure; 10.96.0.0/12 (Services) is left
// out, as the docs advise.
var clusterRanges = []string{"10.244.0.0/16", "172.18.0.0/16", "fd10:244::/56"}

// TestRefusedAddresses pins every form of an address the default policy refuses (with the cluster
// ranges configured), each through CheckAddr (the dial-time check) and CheckURL (the up-front
// check of a URL naming it literally), and that neither message names the address or the port.
func TestRefusedAddresses(t *testing.T) {
	p := mustPolicy(t, Options{ClusterCIDRs: clusterRanges})
	tests := []struct {
		addr string
		why  string // fragment of the message
	}{
		{"127.0.0.1", "loopback"},
		{"127.10.20.30", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"169.254.169.254", "cloud-metadata"}, // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack
		{"169.254.170.2", "cloud-metadata"},   // ECS task credentials
		{"169.254.170.23", "cloud-metadata"},  // EKS Pod Identity
		{"169.254.0.23", "cloud-metadata"},    // Tencent Cloud
		{"169.254.42.42", "cloud-metadata"},   // Scaleway
		{"100.100.100.200", "cloud-metadata"}, // Alibaba Cloud
		{"168.63.129.16", "cloud-metadata"},   // Azure WireServer
		{"192.0.0.192", "cloud-metadata"},     // Oracle Cloud Classic
		{"fd00:ec2::254", "cloud-metadata"},   // AWS IMDS over IPv6
		{"fd00:ec2::23", "cloud-metadata"},    // EKS Pod Identity over IPv6
		{"fd20:ce::254", "cloud-metadata"},    // GCP over IPv6
		{"fd00:c1::a9fe:a9fe", "cloud-metadata"},
		{"fd00:42::42", "cloud-metadata"},
		{"fe80::1", "link-local"},
		{"fe80::a9fe:a9fe", "link-local"},
		{"224.0.0.1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"ff02::1", "multicast"},
		// 169.254.169.254 in every IPv6 embedding.
		{"::ffff:169.254.169.254", "cloud-metadata"},                      // IPv4-mapped
		{"::169.254.169.254", "embedding a link-local or cloud-metadata"}, // IPv4-compatible
		{"::ffff:0:169.254.169.254", "embedding a link-local"},            // SIIT
		{"64:ff9b::169.254.169.254", "embedding a link-local"},            // NAT64 well-known prefix
		{"64:ff9b::a9fe:a9fe", "embedding a link-local"},
		{"64:ff9b:1:a9fe:a9:fe00::", "embedding a link-local"},     // NAT64 local-use, /48 layout
		{"64:ff9b:1:0:a9:fea9:fe00:0", "embedding a link-local"},   // NAT64 local-use, /64 layout
		{"64:ff9b:1::a9fe:a9fe", "embedding a link-local"},         // NAT64 local-use, /96 layout
		{"2002:a9fe:a9fe::1", "embedding a link-local"},            // 6to4
		{"2001:0:a9fe:a9fe::1", "embedding a link-local"},          // Teredo server
		{"2001:0:4136:e378:8000:63bf:5601:5601", "embedding a li"}, // Teredo client (inverted)
		{"2001:db8::5efe:a9fe:a9fe", "embedding a link-local"},     // ISATAP
		{"2001:db8::200:5efe:a9fe:a9fe", "embedding a link-local"},
		// Loopback, unspecified and Alibaba's metadata address embedded.
		{"64:ff9b::127.0.0.1", "embedding a loopback"},
		{"2002:7f00:1::", "embedding a loopback"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "embedding a loopback"},
		{"64:ff9b::0.0.0.0", "embedding an unspecified"},
		{"64:ff9b::100.100.100.200", "embedding a link-local or cloud-metadata"},
		{"2002:6464:64c8::", "embedding a link-local or cloud-metadata"},
		// Pod and node addresses in the cluster ranges, directly and embedded.
		{"10.244.1.5", "cluster-internal"},
		{"172.18.0.2", "cluster-internal"},
		{"::ffff:10.244.1.5", "cluster-internal"},
		{"64:ff9b::10.244.1.5", "embedding a cluster-internal"},
		{"fd10:244::12", "cluster-internal"},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.addr)
		err := p.CheckAddr("hook.example.com", ip)
		var refused *RefusedError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &refused) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckAddr(%s) = %v, want a refusal saying %q", tt.addr, err, tt.why)
			continue
		}
		if refused.Addr != ip.Unmap() || refused.Host != "hook.example.com" {
			t.Errorf("CheckAddr(%s): the error's fields are %s and %q, want the address and host for the debug log", tt.addr, refused.Addr, refused.Host)
		}
		u := "http://" + netip.AddrPortFrom(ip, 8443).String() + "/hook"
		err = p.CheckURL(u)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckURL(%s) = %v, want a refusal saying %q", u, err, tt.why)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, ip.String()) || strings.Contains(msg, ip.Unmap().String()) || strings.Contains(msg, "8443") {
			t.Errorf("CheckURL(%s) = %q: the message names the address or the port", u, msg)
		}
	}
}

// TestAllowedAddresses: public addresses (and their NAT64, 6to4 and Teredo forms), Service
// addresses outside the configured cluster ranges and ordinary IPv6 are not refused.
func TestAllowedAddresses(t *testing.T) {
	p := mustPolicy(t, Options{ClusterCIDRs: clusterRanges})
	for _, a := range []string{"8.8.8.8", "64:ff9b::8.8.8.8", "2606:4700:4700::1111", "10.96.0.10",
		"192.168.1.10", "100.64.0.1", "2002:808:808::1", "fd12::1", "64:ff9b:1::808:808",
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7"} {
		if err := p.CheckAddr("", netip.MustParseAddr(a)); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want allowed", a, err)
		}
	}
}

// TestOptIn: each class the operator allows opens only itself; the classes refused in every
// configuration stay refused, however they are written.
func TestOptIn(t *testing.T) {
	both := mustPolicy(t, Options{ClusterCIDRs: clusterRanges, AllowTo: []string{"loopback", "Cluster"}})
	onlyLoopback := mustPolicy(t, Options{ClusterCIDRs: clusterRanges, AllowTo: []string{Loopback}})
	tests := []struct {
		policy *Policy
		addr   string
		allow  bool
	}{
		{both, "127.0.0.1", true},
		{both, "::1", true},
		{both, "10.244.1.5", true},
		{both, "64:ff9b::10.244.1.5", true},
		{both, "0.0.0.0", false},
		{both, "::", false},
		{both, "169.254.169.254", false},
		{both, "64:ff9b::169.254.169.254", false},
		{both, "100.100.100.200", false},
		{onlyLoopback, "127.0.0.1", true},
		{onlyLoopback, "10.244.1.5", false},
		// An allowed class is allowed embedded too.
		{onlyLoopback, "2002:7f00:1::", true},
	}
	for _, tt := range tests {
		err := tt.policy.CheckAddr("", netip.MustParseAddr(tt.addr))
		if (err == nil) != tt.allow {
			t.Errorf("%s: CheckAddr(%s) = %v, want allowed %v", tt.policy, tt.addr, err, tt.allow)
		}
	}
	// An address of a refused class is refused even when the IPv4 address it embeds is of an
	// allowed one: a pod address (fd10:244::/56) whose ISATAP identifier holds 127.0.0.1.
	if err := onlyLoopback.CheckAddr("", netip.MustParseAddr("fd10:244::5efe:7f00:1")); !errors.Is(err, ErrRefused) {
		t.Errorf("cluster address embedding loopback, loopback allowed = %v, want refused as cluster-internal", err)
	}
}

// TestAllowListNarrowsOnly: an allow-listed name or range never admits an address the classes
// refuse (an ExternalName Service, or any DNS name, resolving to loopback or metadata is refused),
// and only what is listed passes.
func TestAllowListNarrowsOnly(t *testing.T) {
	listed := mustPolicy(t, Options{ClusterCIDRs: clusterRanges,
		AllowedDestinations: []string{"localhost", "*.svc.cluster.local", "10.0.0.0/8", "127.0.0.0/8", "hooks.slack.com"}})
	for _, tt := range []struct {
		host, addr string
		allow      bool
	}{
		{"localhost", "127.0.0.1", false},
		{"hooks.tenant-a.svc.cluster.local", "127.0.0.1", false}, // ExternalName to loopback
		{"hooks.tenant-a.svc.cluster.local", "169.254.169.254", false},
		{"hooks.tenant-a.svc.cluster.local", "10.244.3.4", false}, // a pod
		{"hooks.tenant-a.svc.cluster.local", "10.96.0.12", true},  // a Service
		{"10.96.0.12", "10.96.0.12", true},
		{"hooks.slack.com", "8.8.8.8", true},
		{"example.com", "8.8.8.8", false},
		{"example.com", "10.1.2.3", true}, // an allowed range
	} {
		err := listed.CheckAddr(tt.host, netip.MustParseAddr(tt.addr))
		if (err == nil) != tt.allow {
			t.Errorf("CheckAddr(%s, %s) = %v, want allowed %v", tt.host, tt.addr, err, tt.allow)
		}
	}
}

func TestCheckURL(t *testing.T) {
	open := mustPolicy(t, Options{})
	loop := mustPolicy(t, Options{AllowTo: []string{Loopback}})
	listed := mustPolicy(t, Options{AllowedDestinations: []string{"hooks.slack.com", "*.svc.cluster.local", "10.0.0.0/8", "192.168.1.7"}})
	namesOnly := mustPolicy(t, Options{AllowedDestinations: []string{"hooks.slack.com"}})
	tests := []struct {
		policy *Policy
		url    string
		refuse string // fragment of the error; "" means allowed
	}{
		{nil, "http://169.254.169.254/latest/meta-data/", "a link-local or cloud-metadata address"},
		{nil, "http://127.0.0.1:9090/", "loopback"},
		{open, "http://[fe80::1%25eth0]/", "link-local"}, // a zone must not hide the address
		{open, "http://[fe80::a9fe:a9fe%25lo]:8080/", "link-local"},
		{open, "http://[fd00:ec2::254%25eth0]/", "cloud-metadata"},
		{listed, "http://[fe80::1%25eth0]/", "link-local"},
		{open, "http://localhost:15000/quitquitquit", "loopback"},
		{open, "http://LOCALHOST./", "loopback"},
		{open, "http://admin.localhost:4191/shutdown", "loopback"},
		{loop, "http://localhost:15000/", ""},
		{loop, "http://127.0.0.1:9090/", ""},
		{loop, "http://169.254.169.254/", "cloud-metadata"},
		// Numeric notations a C resolver reads as 127.0.0.1 or 169.254.169.254.
		{loop, "http://2130706433/", "non-standard notation"},
		{open, "http://0x7f.1/", "non-standard notation"},
		{open, "http://127.1:8080/", "non-standard notation"},
		{open, "http://0251.0376.0251.0376/", "non-standard notation"},
		{open, "http://0xa9fea9fe/", "non-standard notation"},
		{open, "http://flagger-loadtester.test/", ""},
		{open, "http://hooks.123/", ""},
		{open, "https://hooks.slack.com/services/T/B/secret", ""},
		{open, "ftp://example.com/", "not an absolute http"},
		{open, "/relative", "not an absolute http"},
		{listed, "https://hooks.slack.com/services/T/B/secret", ""},
		{listed, "http://prometheus.monitoring.svc.cluster.local:9090", ""},
		{listed, "http://10.1.2.3:9090", ""},
		{listed, "http://192.168.1.7/", ""},
		{listed, "http://192.168.1.8/", "not on the allowed destinations"},
		{listed, "http://169.254.169.254/", "link-local"},
		// A name not listed may still resolve into 10.0.0.0/8: decided at dial time.
		{listed, "http://example.com/", ""},
		{namesOnly, "http://example.com/", "not on the allowed destinations"},
	}
	for _, tt := range tests {
		err := tt.policy.CheckURL(tt.url)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want allowed", tt.url, err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
			t.Errorf("CheckURL(%q) = %v, want refusal mentioning %q", tt.url, err, tt.refuse)
		case err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "example.com")):
			t.Errorf("CheckURL(%q) error repeats the URL or its host: %v", tt.url, err)
		}
	}
}

func TestNewPolicyRejectsGarbage(t *testing.T) {
	for _, o := range []Options{
		{AllowedDestinations: []string{"10.0.0.0/33"}},
		{AllowedDestinations: []string{"*."}},
		{AllowedDestinations: []string{"http://x/"}},
		{AllowedDestinations: []string{"a b"}},
		{ClusterCIDRs: []string{"10.244.0.0"}},
		{AllowTo: []string{"private"}},
	} {
		if _, err := NewPolicy(o); err == nil {
			t.Errorf("NewPolicy(%+v) accepted", o)
		}
	}
	// An IPv4-mapped range is the IPv4 range it maps.
	p := mustPolicy(t, Options{ClusterCIDRs: []string{"::ffff:10.244.0.0/112"}})
	if err := p.CheckAddr("", netip.MustParseAddr("10.244.0.9")); !errors.Is(err, ErrRefused) {
		t.Errorf("IPv4-mapped cluster range: 10.244.0.9 = %v, want refused", err)
	}
}
