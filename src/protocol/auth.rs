//! Password scrambles: mysql_native_password (verify as a server, answer as a client) and
//! caching_sha2_password's fast path (answer as a client).

use sha1::{Digest, Sha1};
use sha2::Sha256;

pub const NATIVE_PLUGIN: &[u8] = b"mysql_native_password";
pub const CACHING_SHA2_PLUGIN: &[u8] = b"caching_sha2_password";

/// Parses a stored native hash `*` + 40 hex digits into SHA1(SHA1(password)).
pub fn parse_native_hash(s: &str) -> Option<[u8; 20]> {
    let hex = s.strip_prefix('*')?;
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The stored form of a password: `*` + upper-case hex of SHA1(SHA1(password)).
pub fn native_hash(password: &[u8]) -> String {
    let stage2 = Sha1::digest(Sha1::digest(password));
    let mut s = String::with_capacity(41);
    s.push('*');
    for b in stage2 {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

/// Client side: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))). Empty password sends nothing.
pub fn native_scramble(password: &[u8], salt: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&salt[..salt.len().min(20)]);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// Server side: checks a client's scramble against the stored SHA1(SHA1(password)).
pub fn verify_native(stored: &[u8; 20], salt: &[u8], response: &[u8]) -> bool {
    if response.len() != 20 {
        return false;
    }
    let mut h = Sha1::new();
    h.update(&salt[..salt.len().min(20)]);
    h.update(stored);
    let mix = h.finalize();
    let stage1: Vec<u8> = response
        .iter()
        .zip(mix.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    let candidate = Sha1::digest(&stage1);
    // constant-time comparison: a mismatch position must not be observable
    candidate
        .iter()
        .zip(stored.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// caching_sha2_password fast-auth answer: XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)), salt)).
pub fn sha2_scramble(password: &[u8], salt: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let d1 = Sha256::digest(password);
    let d2 = Sha256::digest(d1);
    let mut h = Sha256::new();
    h.update(d2);
    h.update(&salt[..salt.len().min(20)]);
    let d3 = h.finalize();
    d1.iter().zip(d3.iter()).map(|(a, b)| a ^ b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_hash_matches_mysql_password_function() {
        // MySQL: SELECT PASSWORD('secret') = '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'
        assert_eq!(
            native_hash(b"secret"),
            "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
        );
    }

    #[test]
    fn scramble_verifies_only_with_the_right_password() {
        let stored = parse_native_hash(&native_hash(b"pw1")).expect("valid");
        let salt = b"0123456789abcdefghij";
        assert!(verify_native(&stored, salt, &native_scramble(b"pw1", salt)));
        assert!(!verify_native(
            &stored,
            salt,
            &native_scramble(b"pw2", salt)
        ));
        assert!(!verify_native(
            &stored,
            b"other salt..........",
            &native_scramble(b"pw1", salt)
        ));
        assert!(!verify_native(&stored, salt, b"short"));
    }

    #[test]
    fn hash_parsing_rejects_malformed() {
        assert!(parse_native_hash("14E65567ABDB5135D0CFD9A70B3032C179A49EE7").is_none());
        assert!(parse_native_hash("*14E6").is_none());
        assert!(parse_native_hash("*ZZE65567ABDB5135D0CFD9A70B3032C179A49EE7").is_none());
        assert!(parse_native_hash("*é4E65567ABDB5135D0CFD9A70B3032C179A49EE").is_none());
    }

    #[test]
    fn sha2_scramble_has_digest_length() {
        assert_eq!(sha2_scramble(b"pw", &[1; 20]).len(), 32);
        assert!(sha2_scramble(b"", &[1; 20]).is_empty());
    }
}
