#!/usr/bin/env bash
# Keeps the demo stack (local cluster, simulated mesh, Prometheus, Sluice manager, demo app)
# running in the background for exploring.
#   hack/demo-stack.sh up     start it (bin/demo -keep), wait until it is up, print KUBECONFIG
#   hack/demo-stack.sh down   stop it and check nothing of it is left running
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.cache/demo
PIDFILE=$STATE/demo.pid
LOG=$STATE/demo.log

running() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && [[ $(ps -o stat= -p "$(cat "$PIDFILE")") != Z* ]]; }

up() {
  mkdir -p "$STATE"
  if running; then
    echo "demo stack already running (pid $(cat "$PIDFILE")); 'make demo-down' stops it"
  else
    go build -o bin/demo ./hack/demo
    setsid bin/demo -keep -dir "$PWD/$STATE/cluster" >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 600); do
      grep -q "Stack is up" "$LOG" 2>/dev/null && break
      if ! running; then echo "demo stack failed to start:"; tail -20 "$LOG"; exit 1; fi
      sleep 0.5
    done
  fi
  grep -E "Stack is up|Try:" "$LOG" | sed 's/^[0-9:]*  //'
  echo "logs: $LOG"
}

down() {
  if ! running; then echo "demo stack not running"; rm -f "$PIDFILE"; return 0; fi
  pid=$(cat "$PIDFILE")
  kill -INT "$pid"
  for _ in $(seq 120); do running || break; sleep 0.5; done
  if running; then kill -KILL "$pid"; fi
  rm -f "$PIDFILE"
  left=$(pgrep -f "$PWD/$STATE/cluster" || true)
  if [[ -n $left ]]; then echo "left running after stop: $left"; exit 1; fi
  echo "demo stack stopped"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
