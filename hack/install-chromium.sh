#!/usr/bin/env bash
# Makes sure a Chromium is on PATH for the dashboard's browser tests: Debian's `chromium`
# package when missing (the tests drive it headless through chromedp).
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  exit 0
fi
echo "[install-chromium] installing Debian package chromium" >&2
SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
chromium --version | head -1
