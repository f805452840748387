//! The connection phase: the server greeting (HandshakeV10) and the client's HandshakeResponse41.
//!
//! In the default (backend-authenticates) mode the proxy relays both packets and edits only the
//! capability flags in place, so every other byte — version string, salt, attributes — reaches
//! the other side as sent. In proxy-auth mode it builds them.

use super::constants::cap;
use super::wire::{put_lenenc_bytes, Reader};

/// What the proxy needs to know about a server greeting, including where the capability bytes
/// sit so they can be edited without re-encoding the packet.
#[derive(Debug, Clone)]
pub struct Greeting {
    pub server_version: Vec<u8>,
    pub connection_id: u32,
    pub capabilities: u32,
    pub charset: u8,
    pub status: u16,
    /// The full scramble (part 1 + part 2, without the trailing NUL).
    pub scramble: Vec<u8>,
    pub auth_plugin: Vec<u8>,
    /// MariaDB's extended capabilities (0 for other servers).
    pub ext_capabilities: u32,
    caps_low_at: usize,
    caps_high_at: Option<usize>,
    /// MariaDB puts its extended capabilities in the last 4 of the 10 reserved bytes.
    reserved_at: Option<usize>,
}

pub fn parse_greeting(p: &[u8]) -> Option<Greeting> {
    let mut r = Reader::new(p);
    if r.u8()? != 10 {
        return None;
    }
    let server_version = r.null_terminated().to_vec();
    let connection_id = r.u32()?;
    let mut scramble = r.take(8)?.to_vec();
    r.u8()?; // filler
    let caps_low_at = r.pos();
    let low = u32::from(r.u16()?);
    let mut g = Greeting {
        server_version,
        connection_id,
        capabilities: low,
        charset: 0,
        status: 0,
        scramble: Vec::new(),
        auth_plugin: Vec::new(),
        ext_capabilities: 0,
        caps_low_at,
        caps_high_at: None,
        reserved_at: None,
    };
    if r.is_empty() {
        g.scramble = scramble;
        return Some(g);
    }
    g.charset = r.u8()?;
    g.status = r.u16()?;
    g.caps_high_at = Some(r.pos());
    g.capabilities |= u32::from(r.u16()?) << 16;
    let auth_data_len = r.u8()?;
    g.reserved_at = Some(r.pos());
    let reserved = r.take(10)?;
    if g.capabilities & cap::LONG_PASSWORD == 0 {
        // CLIENT_MYSQL clear: a MariaDB server, its extended capabilities in the last 4 bytes
        g.ext_capabilities =
            u32::from_le_bytes([reserved[6], reserved[7], reserved[8], reserved[9]]);
    }
    if g.capabilities & cap::SECURE_CONNECTION != 0 {
        let n = (usize::from(auth_data_len).saturating_sub(8)).max(13);
        let part2 = r.take(n).or_else(|| Some(r.remaining()))?;
        // part 2 ends with a NUL that is not part of the scramble
        let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
        scramble.extend_from_slice(part2);
    }
    g.scramble = scramble;
    if g.capabilities & cap::PLUGIN_AUTH != 0 {
        g.auth_plugin = r.null_terminated().to_vec();
    }
    Some(g)
}

/// Rewrites the capability flags of a greeting in place, MariaDB's extended ones included.
pub fn set_greeting_capabilities(packet: &mut [u8], g: &Greeting, caps: u32, ext_caps: u32) {
    if let Some(s) = packet.get_mut(g.caps_low_at..g.caps_low_at + 2) {
        s.copy_from_slice(&(caps as u16).to_le_bytes());
    }
    if let Some(at) = g.caps_high_at {
        if let Some(s) = packet.get_mut(at..at + 2) {
            s.copy_from_slice(&((caps >> 16) as u16).to_le_bytes());
        }
    }
    if let Some(at) = g.reserved_at {
        if let Some(s) = packet.get_mut(at + 6..at + 10) {
            s.copy_from_slice(&ext_caps.to_le_bytes());
        }
    }
}

/// Builds a greeting (proxy-auth mode, where the proxy picks the salt).
pub fn build_greeting(
    server_version: &[u8],
    connection_id: u32,
    scramble: &[u8; 20],
    caps: (u32, u32),
    charset: u8,
    status: u16,
    plugin: &[u8],
) -> Vec<u8> {
    let (caps, ext_caps) = caps;
    let mut p = Vec::with_capacity(80 + server_version.len());
    p.push(10);
    p.extend_from_slice(server_version);
    p.push(0);
    p.extend_from_slice(&connection_id.to_le_bytes());
    p.extend_from_slice(&scramble[..8]);
    p.push(0);
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(charset);
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0u8; 6]);
    p.extend_from_slice(&ext_caps.to_le_bytes());
    p.extend_from_slice(&scramble[8..]);
    p.push(0);
    p.extend_from_slice(plugin);
    p.push(0);
    p
}

/// A parsed HandshakeResponse41 (or the 32-byte SSLRequest prefix of one).
#[derive(Debug, Clone, Default)]
pub struct HandshakeResponse {
    pub capabilities: u32,
    pub max_packet: u32,
    pub charset: u8,
    pub user: Vec<u8>,
    pub auth_response: Vec<u8>,
    pub database: Option<Vec<u8>>,
    pub auth_plugin: Option<Vec<u8>>,
    /// Raw connect attributes (length-encoded block), relayed as sent.
    pub attributes: Option<Vec<u8>>,
    /// MariaDB's extended client capabilities (bytes 28..32, when CLIENT_MYSQL is clear).
    pub ext_capabilities: u32,
}

/// The first 32 bytes are fixed; an SSLRequest is exactly those 32 bytes with CLIENT_SSL set.
pub const FIXED_RESPONSE_LEN: usize = 32;

pub fn is_ssl_request(p: &[u8]) -> bool {
    p.len() == FIXED_RESPONSE_LEN && Reader::new(p).u32().is_some_and(|c| c & cap::SSL != 0)
}

pub fn parse_handshake_response(p: &[u8]) -> Option<HandshakeResponse> {
    let mut r = Reader::new(p);
    let capabilities = r.u32()?;
    if capabilities & cap::PROTOCOL_41 == 0 {
        return None; // pre-4.1 clients are not supported
    }
    let max_packet = r.u32()?;
    let charset = r.u8()?;
    let filler = r.take(23)?;
    let ext_capabilities = if capabilities & cap::LONG_PASSWORD == 0 {
        u32::from_le_bytes([filler[19], filler[20], filler[21], filler[22]])
    } else {
        0
    };
    let mut h = HandshakeResponse {
        capabilities,
        max_packet,
        charset,
        ext_capabilities,
        ..Default::default()
    };
    if r.is_empty() {
        return Some(h); // SSLRequest
    }
    h.user = r.null_terminated().to_vec();
    h.auth_response = if capabilities & cap::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        r.lenenc_bytes()?.to_vec()
    } else if capabilities & cap::SECURE_CONNECTION != 0 {
        let n = usize::from(r.u8()?);
        r.take(n)?.to_vec()
    } else {
        r.null_terminated().to_vec()
    };
    if capabilities & cap::CONNECT_WITH_DB != 0 && !r.is_empty() {
        h.database = Some(r.null_terminated().to_vec());
    }
    if capabilities & cap::PLUGIN_AUTH != 0 && !r.is_empty() {
        h.auth_plugin = Some(r.null_terminated().to_vec());
    }
    if capabilities & cap::CONNECT_ATTRS != 0 && !r.is_empty() {
        h.attributes = Some(r.remaining().to_vec());
    }
    Some(h)
}

/// Rewrites the client capability flags of a HandshakeResponse41 in place, MariaDB's extended
/// ones (bytes 28..32) included, to what was advertised and agreed.
pub fn set_response_capabilities(packet: &mut [u8], caps: u32, ext_caps: u32) {
    if let Some(s) = packet.get_mut(0..4) {
        s.copy_from_slice(&caps.to_le_bytes());
    }
    if caps & cap::LONG_PASSWORD == 0 {
        if let Some(s) = packet.get_mut(28..32) {
            s.copy_from_slice(&ext_caps.to_le_bytes());
        }
    }
}

/// Builds a HandshakeResponse41 (proxy-auth mode, where the proxy logs in to the backend).
pub fn build_handshake_response(
    caps: (u32, u32),
    charset: u8,
    user: &[u8],
    auth_response: &[u8],
    database: Option<&[u8]>,
    plugin: &[u8],
) -> Vec<u8> {
    let (caps, ext_caps) = caps;
    let mut caps = caps | cap::PROTOCOL_41 | cap::SECURE_CONNECTION | cap::PLUGIN_AUTH;
    caps |= cap::PLUGIN_AUTH_LENENC_CLIENT_DATA;
    caps &= !cap::CONNECT_ATTRS;
    if database.is_some() {
        caps |= cap::CONNECT_WITH_DB;
    } else {
        caps &= !cap::CONNECT_WITH_DB;
    }
    let mut p = Vec::with_capacity(64 + user.len() + auth_response.len());
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(super::constants::MAX_FRAME as u32).to_le_bytes());
    p.push(charset);
    p.extend_from_slice(&[0u8; 19]);
    let ext = if caps & cap::LONG_PASSWORD == 0 {
        ext_caps
    } else {
        0
    };
    p.extend_from_slice(&ext.to_le_bytes());
    p.extend_from_slice(user);
    p.push(0);
    put_lenenc_bytes(&mut p, auth_response);
    if let Some(db) = database {
        p.extend_from_slice(db);
        p.push(0);
    }
    p.extend_from_slice(plugin);
    p.push(0);
    p
}

/// An AuthSwitchRequest (0xFE, plugin name, plugin data).
pub fn parse_auth_switch(p: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut r = Reader::new(p);
    if r.u8()? != 0xfe {
        return None;
    }
    let plugin = r.null_terminated().to_vec();
    let data = r.remaining();
    let data = data.strip_suffix(&[0]).unwrap_or(data);
    Some((plugin, data.to_vec()))
}

pub fn build_auth_switch(plugin: &[u8], scramble: &[u8]) -> Vec<u8> {
    let mut p = vec![0xfe];
    p.extend_from_slice(plugin);
    p.push(0);
    p.extend_from_slice(scramble);
    p.push(0);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::constants::ext;

    #[test]
    fn greeting_build_parse_and_edit() {
        let salt = *b"abcdefghijklmnopqrst";
        let caps = cap::PROXY_SUPPORTED | cap::SSL;
        let mut p = build_greeting(
            b"5.7.25-x",
            42,
            &salt,
            (caps, 0),
            45,
            2,
            b"mysql_native_password",
        );
        let g = parse_greeting(&p).expect("parses");
        assert_eq!(g.server_version, b"5.7.25-x");
        assert_eq!(g.connection_id, 42);
        assert_eq!(g.capabilities, caps);
        assert_eq!(g.scramble, salt);
        assert_eq!(g.auth_plugin, b"mysql_native_password");
        set_greeting_capabilities(&mut p, &g, caps & !cap::SSL & !cap::DEPRECATE_EOF, 0);
        let g2 = parse_greeting(&p).expect("still parses");
        assert_eq!(g2.capabilities, caps & !cap::SSL & !cap::DEPRECATE_EOF);
        assert_eq!(g2.scramble, salt);
    }

    #[test]
    fn mariadb_extended_capabilities_are_read_and_edited() {
        // MariaDB clears CLIENT_MYSQL (bit 0) and puts 4 more bytes in the reserved area
        let caps = cap::PROXY_SUPPORTED & !cap::LONG_PASSWORD;
        let all = ext::PROGRESS | ext::COM_MULTI | ext::STMT_BULK_OPERATIONS | ext::CACHE_METADATA;
        let mut p = build_greeting(
            b"5.5.5-10.11.19-MariaDB",
            1,
            &[7; 20],
            (caps, all),
            45,
            2,
            b"p",
        );
        let g = parse_greeting(&p).expect("parses");
        assert_eq!(g.ext_capabilities, all);
        set_greeting_capabilities(&mut p, &g, caps, all & ext::PROXY_SUPPORTED);
        let g2 = parse_greeting(&p).expect("parses");
        assert_eq!(
            g2.ext_capabilities,
            ext::PROGRESS | ext::STMT_BULK_OPERATIONS | ext::CACHE_METADATA
        );
        assert_eq!(g2.scramble, g.scramble);
        // the client's answer carries its own in bytes 28..32
        let mut r = build_handshake_response((caps, all), 45, b"u", &[1; 20], None, b"p");
        assert_eq!(
            parse_handshake_response(&r)
                .expect("parses")
                .ext_capabilities,
            all
        );
        set_response_capabilities(&mut r, caps, ext::PROGRESS);
        assert_eq!(
            parse_handshake_response(&r)
                .expect("parses")
                .ext_capabilities,
            ext::PROGRESS
        );
        // with CLIENT_MYSQL set those bytes mean nothing
        let r = build_handshake_response((cap::PROXY_SUPPORTED, all), 45, b"u", &[], None, b"p");
        assert_eq!(
            parse_handshake_response(&r)
                .expect("parses")
                .ext_capabilities,
            0
        );
    }

    #[test]
    fn truncated_greetings_do_not_panic() {
        let p = build_greeting(b"v", 1, &[7; 20], (cap::PROXY_SUPPORTED, 0), 45, 2, b"p");
        for n in 0..p.len() {
            let _ = parse_greeting(&p[..n]);
        }
    }

    #[test]
    fn response_build_parse_and_edit() {
        let caps = cap::PROXY_SUPPORTED;
        let mut p = build_handshake_response(
            (caps, 0),
            45,
            b"root",
            &[1; 20],
            Some(b"db1"),
            b"mysql_native_password",
        );
        let h = parse_handshake_response(&p).expect("parses");
        assert_eq!(h.user, b"root");
        assert_eq!(h.auth_response, vec![1; 20]);
        assert_eq!(h.database.as_deref(), Some(&b"db1"[..]));
        assert_eq!(
            h.auth_plugin.as_deref(),
            Some(&b"mysql_native_password"[..])
        );
        set_response_capabilities(&mut p, h.capabilities & !cap::DEPRECATE_EOF, 0);
        let h2 = parse_handshake_response(&p).expect("still parses");
        assert_eq!(h2.capabilities, h.capabilities & !cap::DEPRECATE_EOF);
        for n in 0..p.len() {
            let _ = parse_handshake_response(&p[..n]);
        }
    }

    #[test]
    fn ssl_request_is_recognised() {
        let mut p = vec![0u8; 32];
        p[..4].copy_from_slice(&(cap::PROTOCOL_41 | cap::SSL).to_le_bytes());
        assert!(is_ssl_request(&p));
        p[..4].copy_from_slice(&cap::PROTOCOL_41.to_le_bytes());
        assert!(!is_ssl_request(&p));
    }
}
