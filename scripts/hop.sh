# Shared by the benchmark scripts (sourced, not run): a free loopback port, waiting for a port to
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
