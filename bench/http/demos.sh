# Sourced by the HTTP benchmark scripts (run.sh, stream.sh, profile.sh): demos started in the
# background on loopback with random ports, their ports once they listen, and their cleanup.
#
# Before starting demos, set `demo` (the floodgate-demo binary; build_demo does) and optionally
# the array `demo_pin` (a command prefix such as `taskset -c 1`; pin_cpus does) and
# `demo_threads` (1). Provides `tmp` (a temporary directory, removed on exit with every demo
# killed), `demo_pid[NAME]`, pin_cpus, build_demo, start_demo and port_of.

tmp=$(mktemp -d)
pids=()
declare -A demo_pid
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# pin_cpus: sets `server_pin` and `client_pin` (taskset prefixes, maybe empty) from SERVER_CPUS
# and CLIENT_CPUS; by default, with two or more CPUs, the demos share the last CPU and the
# clients get the others.
pin_cpus() {
  local cpus server_cpus=${SERVER_CPUS:-} client_cpus=${CLIENT_CPUS:-}
  cpus=$(nproc)
  if [ -z "$server_cpus$client_cpus" ] && [ "$cpus" -ge 2 ]; then
    server_cpus=$((cpus - 1))
    client_cpus=0-$((cpus - 2))
  fi
  server_pin=()
  client_pin=()
  [ -n "$server_cpus" ] && server_pin=(taskset -c "$server_cpus")
  [ -n "$client_cpus" ] && client_pin=(taskset -c "$client_cpus")
  demo_pin=("${server_pin[@]}")
  pin_description="demos on CPUs ${server_cpus:-any}, wrk on CPUs ${client_cpus:-any}"
}

# build_demo BUILD_DIR: configures a Release build there if there is none, builds the demo and
# sets `demo`.
build_demo() {
  if [ ! -f "$1/CMakeCache.txt" ]; then
    cmake --preset release -DCMAKE_COMPILE_WARNING_AS_ERROR=OFF >/dev/null
  fi
  cmake --build "$1" --target floodgate-demo >/dev/null
  demo="$1/examples/floodgate-demo"
}

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
