#!/usr/bin/env bash
# The container images and their compose workflow, built and run for real.
#   scripts/docker.sh images  -> Debian's docker.io, docker-compose and debootstrap when missing,
#                                dockerd when not running, the base images the Dockerfiles name
#                                when no registry gives them (made from Debian's packages with
#                                debootstrap + docker import), then `docker-compose build`
#   scripts/docker.sh test    -> images, then the acceptance workflow (tests/docker/workflow.sh):
#                                compose up, the guide's workflow through the front's port, both
#                                proxies scraped, one proxy stopped under a client loop, down/up
#                                keeps seekdb's data; everything it started is stopped at the end
# Needs root (dockerd, debootstrap). Base images are made only where `docker image inspect`
# does not find them: with a registry, the official ones are used.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-images}
work=$root/target/docker
mkdir -p "$work"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Debian's docker CLI (another one earlier on PATH builds with other cache keys)
docker=/usr/bin/docker
export DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}

scripts/install-deps.sh docker

# dockerd: started here when not running, and stopped by `test` at its end
started_dockerd=
if ! $docker info >/dev/null 2>&1; then
  dockerd >"$work/dockerd.log" 2>&1 &
  echo $! >"$work/dockerd.pid"
  started_dockerd=$!
  for _ in $(seq 1 120); do $docker info >/dev/null 2>&1 && break; sleep 0.5; done
  $docker info >/dev/null 2>&1 || { cat "$work/dockerd.log"; echo "dockerd did not start" >&2; exit 1; }
fi

# a debootstrap tree as an image's root: Debian's sources, the host's extra CA certificates
# (where HTTPS to the registries goes through an intercepting proxy, as on these machines;
# nothing is copied elsewhere), no package lists, no host name
finish_rootfs() {
  local r=$1
  cat >"$r/etc/apt/sources.list" <<S
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
S
  mkdir -p "$r/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$r/usr/local/share/ca-certificates/" 2>/dev/null || true
  if [[ -x $r/usr/sbin/update-ca-certificates ]]; then chroot "$r" update-ca-certificates >/dev/null 2>&1 || true; fi
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb
  : >"$r/etc/resolv.conf"
  : >"$r/etc/hostname"
}

base_path='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

make_base() { # TAG -> built from Debian's packages when no registry gave it
  local tag=$1 r
  if $docker image inspect "$tag" >/dev/null 2>&1; then return; fi
  if $docker pull -q "$tag" >/dev/null 2>&1; then return; fi
  echo "making $tag from Debian's packages (no image registry)"
  r=$work/rootfs-${tag//[:\/.]/-}
  rm -rf "$r"
  case $tag in
    debian:bookworm-slim)
      debootstrap --variant=minbase bookworm "$r" "$mirror" >"$r.log" 2>&1
      finish_rootfs "$r"
      tar -C "$r" -c . | $docker import -c 'CMD ["bash"]' -c "$base_path" - "$tag" >/dev/null
      ;;
    python:3.11-slim-bookworm)
      debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates,netbase \
        bookworm "$r" "$mirror" >"$r.log" 2>&1
      finish_rootfs "$r"
      # `python` and `pip` first on PATH, as in the official image (Debian's own Python is
      # externally managed)
      chroot "$r" python3 -m venv /opt/venv
      tar -C "$r" -c . | $docker import -c 'CMD ["python3"]' -c 'ENV LANG=C.UTF-8' \
        -c 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$tag" >/dev/null
      ;;
    rust:1.95-bookworm)
      debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates,netbase \
        bookworm "$r" "$mirror" >"$r.log" 2>&1
      # this machine's Rust toolchain, laid out as the official image lays it out
      local src tc=1.95.0-x86_64-unknown-linux-gnu
      src=$(rustup toolchain list -v 2>/dev/null | awk '/^1\.95|^stable/ {print $NF; exit}')
      [[ -d $src ]] || src=$(readlink -f "$HOME/.rustup/toolchains/$tc")
      [[ -d $src ]] || { echo "no Rust 1.95 toolchain on this machine to make $tag from" >&2; exit 1; }
      mkdir -p "$r/usr/local/rustup/toolchains/$tc" "$r/usr/local/cargo/bin"
      tar -C "$src" --exclude=./share/doc -c . | tar -C "$r/usr/local/rustup/toolchains/$tc" -x
      cp "$(command -v rustup)" "$r/usr/local/cargo/bin/rustup"
      for p in cargo rustc rustdoc; do ln -sf rustup "$r/usr/local/cargo/bin/$p"; done
      printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "minimal"\nauto_self_update = "disable"\n' \
        "$tc" >"$r/usr/local/rustup/settings.toml"
      finish_rootfs "$r"
      tar -C "$r" -c . | $docker import -c 'ENV RUSTUP_HOME=/usr/local/rustup' \
        -c 'ENV CARGO_HOME=/usr/local/cargo' -c 'ENV RUST_VERSION=1.95.0' \
        -c 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'CMD ["bash"]' - "$tag" >/dev/null
      ;;
    *) echo "no recipe for base image $tag" >&2; exit 1 ;;
  esac
  rm -rf "$r"
}

# the base images the Dockerfiles name
for f in docker/*Dockerfile; do
  awk 'toupper($1) == "FROM" {print $2}' "$f"
done | sort -u | while read -r tag; do make_base "$tag"; done

compose() { PATH=/usr/bin:$PATH docker-compose -f docker/compose.yaml -p obkv "$@"; }
export -f compose 2>/dev/null || true
echo "building the images (docker/compose.yaml)"
compose config -q
if ! compose build >"$work/build.log" 2>&1; then
  tail -n 60 "$work/build.log"
  echo "docker-compose build failed (whole log: $work/build.log)" >&2
  exit 1
fi

if [[ $what == test ]]; then
  status=0
  # seekdb's container refuses to start (exit code 1) when the disk cannot hold its data file
  root_dir=$($docker info -f '{{.DockerRootDir}}' 2>/dev/null || echo /var/lib/docker)
  free_mib=$(df -Pm "$root_dir" 2>/dev/null | awk 'NR == 2 {print $4}')
  echo "free disk where the containers' volumes go ($root_dir): ${free_mib:-?} MiB (seekdb's needs about 3,000)"
  PATH=/usr/bin:$PATH .venv/bin/python tests/docker/workflow.py || status=$?
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  if [[ -n $started_dockerd ]]; then
    # the images stay for the next run; the daemon stops with the test (and is gone, socket
    # and all, before this returns: a next run starts its own)
    kill "$started_dockerd" 2>/dev/null || true
    for _ in $(seq 1 120); do kill -0 "$started_dockerd" 2>/dev/null || break; sleep 0.5; done
    for _ in $(seq 1 60); do $docker info >/dev/null 2>&1 || break; sleep 0.5; done
  fi
  exit $status
fi
