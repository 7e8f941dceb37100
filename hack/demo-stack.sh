#!/usr/bin/env bash
# Keeps the demo stack (local cluster, simulated mesh, Prometheus, demo app) running in the
# background for exploring, with the Sluice manager as its own process (bin/sluice) so it can be
# stopped and restarted alone.
#   hack/demo-stack.sh up                start it, wait until the Canary is initialized, print KUBECONFIG
#   hack/demo-stack.sh restart-manager   stop the manager and start it again (status is its only memory)
#   hack/demo-stack.sh down              stop everything and check nothing of it is left running
# POD_READY_DELAY (default 1s) is how long pods take to become ready, e.g. POD_READY_DELAY=5s.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.cache/demo
PIDFILE=$STATE/demo.pid
MANAGER_PIDFILE=$STATE/manager.pid
LOG=$STATE/demo.log
MANAGER_LOG=$STATE/manager.log
POD_READY_DELAY=${POD_READY_DELAY:-1s}

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null && [[ $(ps -o stat= -p "$(cat "$1")") != Z* ]]; }
running() { alive "$PIDFILE"; }


start_manager() {
  local kubeconfig prom
  kubeconfig=$(grep -m1 "Stack is up" "$LOG" | sed -E 's/.*KUBECONFIG=([^ ]+).*/\1/')
  prom=$(grep -m1 "Stack is up" "$LOG" | sed -E 's/.*Prometheus: ([^ ]+).*/\1/')
  KUBECONFIG=$kubeconfig setsid bin/sluice --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 \
    --metrics-server="$prom" --prometheus-scrape-interval=1s >>"$MANAGER_LOG" 2>&1 </dev/null &
  echo $! >"$MANAGER_PIDFILE"
  echo "manager running (pid $!, logs $MANAGER_LOG)"
}

stop_manager() {
  if alive "$MANAGER_PIDFILE"; then
    local pid; pid=$(cat "$MANAGER_PIDFILE")
    # The manager may exit between a check and a signal: a pid that is gone counts as stopped.
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 60); do alive "$MANAGER_PIDFILE" || break; sleep 0.5; done
    if alive "$MANAGER_PIDFILE"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$MANAGER_PIDFILE"
}

up() {
  mkdir -p "$STATE"
  if running; then
    echo "demo stack already running (pid $(cat "$PIDFILE")); 'make demo-down' stops it"
  else
    go build -o bin/demo ./hack/demo
    go build -o bin/sluice ./cmd/sluice
    : >"$LOG"
    setsid bin/demo -keep -external-manager -pod-ready-delay "$POD_READY_DELAY" -dir "$PWD/$STATE/cluster" >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 600); do
      grep -q "Stack is up" "$LOG" 2>/dev/null && break
      if ! running; then echo "demo stack failed to start:"; tail -20 "$LOG"; exit 1; fi
      sleep 0.5
    done
  fi
  alive "$MANAGER_PIDFILE" || start_manager
  local kubeconfig; kubeconfig=$(grep -m1 "Stack is up" "$LOG" | sed -E 's/.*KUBECONFIG=([^ ]+).*/\1/')
  for _ in $(seq 240); do
    phase=$(KUBECONFIG=$kubeconfig bin/kubectl -n demo get canary podinfo -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [[ $phase == Initialized || $phase == Succeeded ]] && break
    sleep 0.5
  done
  echo "canary demo/podinfo: ${phase:-unknown} (pods become ready after $POD_READY_DELAY)"
  grep -E "Stack is up|Try:" "$LOG" | sed 's/^[0-9:]*  //'
  echo "logs: $LOG, manager: $MANAGER_LOG"
}

down() {
  stop_manager
  if ! running; then echo "demo stack not running"; rm -f "$PIDFILE"; return 0; fi
  pid=$(cat "$PIDFILE")
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 120); do running || break; sleep 0.5; done
  if running; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$PIDFILE"
  left=$(pgrep -f "$PWD/$STATE/cluster" || true)
  if [[ -n $left ]]; then echo "left running after stop: $left"; exit 1; fi
  echo "demo stack stopped"
}

case ${1:-} in
  up) up ;;
  restart-manager) stop_manager; start_manager ;;
  down) down ;;
  *) echo "usage: $0 up|restart-manager|down" >&2; exit 2 ;;
esac
