//! A statement's digest for logs: its tokens with every literal (string, number, hex) and
//! variable's value replaced by `?`, comments and spacing dropped, at most `MAX` bytes — what a
//! slow-statement log may show without a rowkey or a value in it.

use super::scan::{Dialect, Scanner, Tok};

/// Most bytes of a digest (a longer one ends in `…`).
pub const MAX: usize = 512;

/// The digest of `sql` as `d` reads it; what cannot be lexed ends the digest with `…`.
pub fn digest(sql: &[u8], d: Dialect) -> String {
    let mut out = String::with_capacity(64);
    let mut last_literal = false;
    for t in Scanner::new(sql, d) {
        let Ok(t) = t else {
            out.push_str(" …");
            break;
        };
        let text: std::borrow::Cow<'_, str> = match t.kind {
            Tok::Str | Tok::Hex | Tok::Number => {
                // adjacent strings ('a' 'b') are one literal
                if last_literal {
                    continue;
                }
                last_literal = true;
                "?".into()
            }
            _ => {
                last_literal = false;
                String::from_utf8_lossy(t.text(sql))
            }
        };
        let glue = matches!(t.kind, Tok::Punct(b',' | b')' | b';' | b'.'))
            || out.ends_with(['(', '.'])
            || out.is_empty();
        if !glue {
            out.push(' ');
        }
        if out.len() + text.len() > MAX {
            out.push('…');
            break;
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_never_reach_the_digest() {
        let d = Dialect::default();
        assert_eq!(
            digest(
                b"INSERT INTO g$f (K, Q, T, V) VALUES ('secret', 'q', -1700, X'00ff') /* c */",
                d
            ),
            "INSERT INTO g$f (K, Q, T, V) VALUES (?, ?, - ?, ?)"
        );
        assert_eq!(
            digest(b"SELECT * FROM t WHERE K LIKE 'ab' 'cd%'", d),
            "SELECT * FROM t WHERE K LIKE ?"
        );
        assert!(digest(b"SELECT 'unterminated", d).ends_with('…'));
        let long = format!("SELECT {}", "col, ".repeat(500));
        assert!(digest(long.as_bytes(), d).chars().count() <= MAX + 1);
    }
}
