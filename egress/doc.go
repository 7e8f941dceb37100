// Package egress decides where Sluice's outbound HTTP calls may go — webhooks, notifications and
// Prometheus queries — and builds the HTTP clients that enforce it. Every URL comes from a tenant
// (a Canary, a MetricTemplate, an AlertProvider's Secret), so by default nothing inside the
// cluster's own plumbing is reachable.
//
// Every client built here:
//   - never follows a redirect: a 3xx answer is returned as it is (callers report its status), so a
//     destination cannot send a request, or its credentials, somewhere else;
//   - never connects to an unspecified (0.0.0.0/8, ::), link-local (169.254.0.0/16, fe80::/10) or
//     cloud-metadata address (the link-local ones, Alibaba's 100.100.100.200, Azure's WireServer
//     168.63.129.16, AWS's, GCP's, Oracle's and Scaleway's IPv6 ones), nor a multicast or
//     broadcast one, whatever the configuration;
//   - refuses loopback (127.0.0.0/8, ::1: the manager's own pod, and its mesh proxy's admin
//     ports) and the configured cluster ranges unless the operator allows that class;
//   - judges an IPv6 address by every IPv4 address it embeds as well (IPv4-mapped and
//     -compatible, SIIT, NAT64, 6to4, Teredo, ISATAP): 64:ff9b::a9fe:a9fe is 169.254.169.254;
//   - runs these checks on the resolved address in the dialer's Control hook, after DNS and
//     before connect, so a host name that resolves (or is rebound) to such an address is refused
//     without a packet being sent, allow-listed name or not;
//   - with an allow-list, connects only to destinations on it (host names, *.domain suffixes, IP
//     addresses or CIDR ranges); the list narrows what the classes leave, it never widens it;
//   - ignores HTTP(S)_PROXY: a proxy would make the connection, so the address checks above would
//     see the proxy and not the destination.
//
// CheckURL gives the same verdict without dialing where the URL alone decides it (a literal IP, a
// host name the allow-list cannot admit), so the controller can refuse a spec up front.
//
// A failed call reaches status, conditions and events only as a fixed reason (Reason, Summary,
// StatusMessage): error texts name resolved addresses, ports and certificates, and belong in the
// debug log.
package egress
