//! The backends `scripts/backend.sh` starts (for the tests, the benchmarks and the run command)
//! listen on loopback only: seekdb's SQL listener binds 0.0.0.0 by itself, with a root account
//! without password, and is kept on 127.0.0.1 by the bind() shim the script preloads into it
//! (scripts/loopback-bind.c). Checked two ways: the kernel's table of listening sockets names
//! only loopback addresses for the port, and a connection to the port through each of the
//! machine's other addresses is refused.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use crate::common::{shared, BOTH};

/// The addresses TCP sockets listen at on `port`, from /proc/net/tcp and /proc/net/tcp6 (state
/// 0A is LISTEN; an address is 32-bit words printed as numbers in the machine's byte order).
fn listening_addresses(port: u16) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(&"0A")) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            let Some((addr, p)) = local.split_once(':') else {
                continue;
            };
            if u16::from_str_radix(p, 16).ok() != Some(port) {
                continue;
            }
            let words: Vec<u32> = (0..addr.len() / 8)
                .filter_map(|i| u32::from_str_radix(&addr[i * 8..i * 8 + 8], 16).ok())
                .collect();
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            out.push(match bytes.len() {
                4 => IpAddr::from(<[u8; 4]>::try_from(bytes).expect("4 bytes")),
                _ => IpAddr::from(<[u8; 16]>::try_from(bytes).expect("16 bytes")),
            });
        }
    }
    out
}

fn is_loopback(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The machine's own addresses other than loopback: IPv4 from /proc/net/fib_trie (the `/32 host
/// LOCAL` entries), IPv6 from /proc/net/if_inet6 (global ones; a link-local one needs a scope).
fn other_local_addresses() -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        let mut last: Option<IpAddr> = None;
        for line in trie.lines() {
            let line = line.trim();
            if let Some(a) = line.strip_prefix("|-- ") {
                last = a.parse().ok();
            } else if line.starts_with("/32 host LOCAL") {
                if let Some(a) = last.filter(|a| !is_loopback(a) && !out.contains(a)) {
                    out.push(a);
                }
            }
        }
    }
    if let Ok(table) = std::fs::read_to_string("/proc/net/if_inet6") {
        for line in table.lines() {
            let Some(hex) = line.split_whitespace().next() else {
                continue;
            };
            let Ok(n) = u128::from_str_radix(hex, 16) else {
                continue;
            };
            let a = std::net::Ipv6Addr::from(n);
            let link_local = a.segments()[0] & 0xffc0 == 0xfe80;
            if !a.is_loopback() && !link_local {
                out.push(IpAddr::V6(a));
            }
        }
    }
    out
}

#[test]
fn the_test_backends_listen_on_loopback_only() {
    let others = other_local_addresses();
    for kind in BOTH {
        let b = shared(kind);
        if b.pid.is_none() {
            eprintln!(
                "{}: an instance given by the environment ({}); its addresses are its own",
                kind.name(),
                b.addr
            );
            continue;
        }
        let at = listening_addresses(b.port);
        assert!(
            !at.is_empty(),
            "{}: nothing listens on port {} in /proc/net/tcp",
            kind.name(),
            b.port
        );
        assert!(
            at.iter().all(is_loopback),
            "{} listens on port {} beyond loopback: {at:?}",
            kind.name(),
            b.port
        );
        for a in &others {
            let to = SocketAddr::new(*a, b.port);
            match TcpStream::connect_timeout(&to, Duration::from_secs(3)) {
                Ok(_) => panic!("{}: a connection to {to} was accepted", kind.name()),
                Err(e) => assert_eq!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused,
                    "{}: {to}: {e}",
                    kind.name()
                ),
            }
        }
    }
    eprintln!("other local addresses tried: {others:?}");
}

#[test]
fn proc_net_tcp_is_read_right() {
    // this process's own listeners: one on loopback, one on every address
    let lo = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback listener");
    let any = std::net::TcpListener::bind("0.0.0.0:0").expect("wildcard listener");
    let lo_port = lo.local_addr().expect("addr").port();
    let any_port = any.local_addr().expect("addr").port();
    assert_eq!(listening_addresses(lo_port), [IpAddr::from([127, 0, 0, 1])]);
    assert_eq!(listening_addresses(any_port), [IpAddr::from([0, 0, 0, 0])]);
    assert!(!is_loopback(&IpAddr::from([0, 0, 0, 0])));
}
