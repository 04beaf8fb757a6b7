# Sourced by the HTTP benchmark scripts (run.sh, stream.sh, profile.sh): demos started in the
# background on loopback with random ports, their ports once they listen, and their cleanup.
#
# Before sourcing, set `demo` (the floodgate-demo binary) and optionally the array `demo_pin`
# (a command prefix such as `taskset -c 1`) and `demo_threads` (1). Provides `tmp` (a temporary
# directory, removed on exit with every demo killed), `demo_pid[NAME]`, start_demo and port_of.

tmp=$(mktemp -d)
pids=()
declare -A demo_pid
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_demo NAME [FLAGS...]: starts a demo with bench/http/rules.yaml; its output goes to
# $tmp/NAME.out and .err.
start_demo() {
  local name=$1
  shift
  "${demo_pin[@]}" "$demo" --port 0 --admin-port 0 --threads "${demo_threads:-1}" \
    --rules bench/http/rules.yaml "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
  demo_pid[$name]=$!
}

# port_of NAME [listening|admin]: waits until the demo prints that line; prints its port.
port_of() {
  local name=$1 line=${2:-listening}
  for _ in $(seq 1 500); do
    if grep -qs "^$line on" "$tmp/$name.out"; then
      sed -n "s/^$line on http:\/\/[^:]*:\([0-9]*\)\$/\1/p" "$tmp/$name.out"
      return
    fi
    sleep 0.01
  done
  echo "$name did not start:" >&2
  cat "$tmp/$name.err" >&2
  exit 1
}
