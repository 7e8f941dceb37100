// Package egress decides where Sluice's outbound HTTP calls may go — webhooks, notifications and
// Prometheus queries — and builds the HTTP clients that enforce it.
//
// Every client built here:
//   - never follows a redirect: a 3xx answer is returned as it is (callers report its status), so a
//     destination cannot send a request, or its credentials, somewhere else;
//   - never connects to a link-local or cloud-metadata address (169.254.0.0/16, fe80::/10,
//     fd00:ec2::254), whatever the URL names: the check runs on the resolved address in the
//     dialer's Control hook, after DNS and before connect, so a host name that resolves (or is
//     rebound) to such an address is refused without a packet being sent;
//   - with an allow-list, connects only to destinations on it (host names, *.domain suffixes, IP
//     addresses or CIDR ranges);
//   - ignores HTTP(S)_PROXY: a proxy would make the connection, so the address checks above would
//     see the proxy and not the destination.
//
// CheckURL gives the same verdict without dialing where the URL alone decides it (a literal IP, a
// host name the allow-list cannot admit), so the controller can refuse a spec up front.
package egress
