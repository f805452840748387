# The TCP front of docker/compose.yaml: HAProxy from Debian's packages, spreading clients over
# the proxies that answer their /readyz (docker/haproxy.cfg).
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
COPY docker/haproxy.cfg /etc/haproxy/haproxy.cfg
EXPOSE 2883
CMD ["haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
