# Shared by the benchmark and ring scripts (sourced, not run): a free loopback port, waiting for a port to
# take connections, and HAProxy in TCP mode in front of a backend port (the hop that understands
# nothing, the benchmarks' yardstick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT: until 127.0.0.1:PORT takes a connection (at most 30 s; fails after that)
wait_port() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# haproxy_config LISTEN_PORT BACKEND_PORT [MAXCONN, default 4096] -> the configuration on stdout
haproxy_config() {
  cat <<CFG
global
  maxconn ${3:-4096}
defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h
frontend mysql
  bind 127.0.0.1:$1
  default_backend db
backend db
  server db1 127.0.0.1:$2
CFG
}

# mux_ratio PORT: one line of what multiplexing reached through the proxy listening on PORT
# (client sessions per backend connection at the most open at once, restores, pins by reason)
mux_ratio() {
  mariadb --protocol=tcp -h127.0.0.1 -P"$1" -uroot -N -e 'SHOW PROXY STATUS' | awk '
    $1 == "multiplex_sessions_total" { s = $2 }
    $1 == "multiplex_backend_connections_peak" { p = $2 }
    $1 ~ /^multiplex_pins_/ && $2 > 0 { pins = pins " " substr($1, 16) "=" $2; n += $2 }
    $1 == "multiplex_state_restores" { r = $2 }
    END {
      printf "multiplexing: %d client sessions, at most %d backend connections open: %.1f sessions a connection; %d state restores; %d sessions pinned:%s\n", s, p, (p ? s / p : 0), r, n, pins
    }'
}

# mux_proxy LISTEN_PORT BACKEND_PORT DIR: starts obkv-proxy multiplexing its clients on at most
# 8 backend connections a user (issue 43; no admin listener), its configuration and log
# (proxy-mux.log) in DIR; its pid is then in $!
mux_proxy() {
  printf '[multiplex]\nmode = "transaction"\nmax_backend_connections = 8\n' >"$3/mux.toml"
  target/release/obkv-proxy -c "$3/mux.toml" --listen "127.0.0.1:$1" --admin-listen "" \
    --backend "127.0.0.1:$2" 2>"$3/proxy-mux.log" &
}
