#!/usr/bin/env bash
# Makes sure a Prometheus server and promtool are on PATH: Debian's `prometheus` package when
# missing (tests start their own server; the package's service is not used).
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  exit 0
fi
echo "[install-prometheus] installing Debian package prometheus" >&2
SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package starts a system service on :9090; tests run their own servers on other ports.
$SUDO systemctl stop prometheus 2>/dev/null || $SUDO service prometheus stop 2>/dev/null || true
prometheus --version | head -1
