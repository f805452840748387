//! Which tables are HBase tables, and in which table group, is kept in the tables themselves:
//! the proxy adds a marker to the table's COMMENT in the same DDL statement that creates or
//! alters it. The backend's own metadata is then the only record of membership — atomic with
//! the DDL, carried along by RENAME (across databases too), CREATE TABLE … LIKE and ALTER,
//! gone with DROP TABLE and DROP DATABASE, and visible to a user exactly as far as the
//! backend's grants show the table in information_schema.
//!
//! The marker names the table's definition by the SHA-256 of its DDL text (kept in the catalog
//! schema, content-addressed: a row whose text does not hash to its name is ignored, so a
//! catalog row cannot be forged to change what another user's table looks like) and, only when
//! the table's name does not say it (`group$family`), its table group.
//!
//! Pure: no I/O. The session reads comments and runs statements.

use sha2::{Digest, Sha256};

use crate::sql::ddl::{AlterAction, CreateTable};

/// Every marker starts with this; the version lets a later layout be told apart.
pub const TAG: &str = "obkv-hbase:1:";

/// What a marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// SHA-256 of the DDL text, 64 lowercase hex digits.
    pub ddl_id: String,
    /// The table group, as UTF-8 bytes, when the name does not carry it.
    pub group: Option<Vec<u8>>,
}

/// The id of a DDL text: its SHA-256 in lowercase hex.
pub fn ddl_id(ddl: &[u8]) -> String {
    hex_lower(&Sha256::digest(ddl))
}

fn hex_lower(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| Some(digit(*p.first()?)? << 4 | digit(*p.get(1)?)?))
        .collect()
}

/// Decodes the HEX() of a name as the backend printed it.
pub fn from_hex(s: &[u8]) -> Option<Vec<u8>> {
    unhex(s)
}

impl Marker {
    /// The marker's text (ASCII only, so it reads the same in every client character set).
    pub fn render(&self) -> String {
        let mut s = format!("{TAG}{}", self.ddl_id);
        if let Some(g) = &self.group {
            s.push_str(":g=");
            s.push_str(&hex_lower(g));
        }
        s
    }

    /// The marker in a table comment (the last one, if a user copied one into their text).
    pub fn find(comment: &[u8]) -> Option<(Marker, usize)> {
        let at = memchr::memmem::rfind(comment, TAG.as_bytes())?;
        let rest = comment.get(at + TAG.len()..)?;
        let id = rest.get(..64)?;
        if !id
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        {
            return None;
        }
        let after = rest.get(64..).unwrap_or_default();
        let group = match after.strip_prefix(b":g=") {
            Some(h) => {
                let end = h
                    .iter()
                    .position(|c| !c.is_ascii_hexdigit())
                    .unwrap_or(h.len());
                Some(unhex(h.get(..end)?)?)
            }
            None => None,
        };
        let ddl_id = String::from_utf8_lossy(id).into_owned();
        Some((Marker { ddl_id, group }, at))
    }

    /// The table group of a table with this marker: the one it names, else the part of the
    /// table's name before its `$`.
    pub fn group_of(&self, table_name: &[u8]) -> Option<Vec<u8>> {
        if let Some(g) = &self.group {
            return Some(g.clone());
        }
        let dollar = memchr::memchr(b'$', table_name)?;
        let g = table_name.get(..dollar)?;
        (!g.is_empty()).then(|| g.to_vec())
    }
}

/// The user's own part of a comment that carries a marker (what they wrote, as they wrote it).
pub fn user_comment(comment: &[u8]) -> &[u8] {
    match Marker::find(comment) {
        Some((_, at)) => {
            let before = comment.get(..at).unwrap_or_default();
            before.strip_suffix(b" ").unwrap_or(before)
        }
        None => comment,
    }
}

/// A name as the backend compares it: folded to lower case when it compares names
/// case-insensitively (`lower_case_table_names` ≠ 0), else unchanged. Bytes that are not UTF-8
/// are kept as they are.
pub fn fold(name: &[u8], names_ci: bool) -> Vec<u8> {
    if !names_ci {
        return name.to_vec();
    }
    match std::str::from_utf8(name) {
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => name.to_ascii_lowercase(),
    }
}

/// The backend's named lock (GET_LOCK) that serializes DDL on one table group across every
/// proxy of a catalog: at most 64 characters whatever the names.
pub fn lock_name(catalog_schema: &str, group_key: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(catalog_schema.as_bytes());
    h.update([0]);
    h.update(group_key);
    let d = h.finalize();
    format!("obkv:{}", hex_lower(d.get(..20).unwrap_or_default()))
}

/// Why a marker cannot be put into a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannotMark(pub &'static str);

/// Where the marker goes in a CREATE TABLE: at the end of the user's COMMENT string (inside its
/// quotes), or as a COMMENT option right after the column list. Returns (offset, text to
/// insert); the caller splices it together with its other edits.
pub fn create_edit(t: &CreateTable, marker: &Marker) -> Result<(usize, String), CannotMark> {
    let m = marker.render();
    match t.option("COMMENT") {
        Some(o) if !o.value_is_string => Err(CannotMark(
            "the table's COMMENT is not a quoted string; write it as COMMENT = '...'",
        )),
        Some(o) => {
            let close = o.value_span.1.saturating_sub(1);
            let empty = o.value.is_empty();
            Ok((close, if empty { m } else { format!(" {m}") }))
        }
        None => Ok((t.elements_end + 1, format!(" COMMENT = '{m}'"))),
    }
}

/// An ALTER TABLE keeps the table's marker (or moves it to a new definition): a COMMENT the user
/// sets gets the marker at the end of its string; otherwise `COMMENT = '<user's comment>
/// <marker>'` is added (before a PARTITION BY clause, which must come last). `current` is the
/// user's part of the comment as the backend returned it on the user's connection (in the
/// client's character set); it is quoted here, which is unsafe where 0x5C can be part of a
/// character (`multibyte_backslash`): then the statement is refused rather than guessed.
///
/// `needed` says whether the ALTER must carry the marker even when it does not touch COMMENT (its
/// definition changed). Returns the edits to splice.
pub fn alter_edits(
    actions: &[AlterAction],
    marker: &Marker,
    current: &[u8],
    needed: bool,
    multibyte_backslash: bool,
    end: usize,
) -> Result<Vec<(usize, Vec<u8>)>, CannotMark> {
    let m = marker.render();
    if let Some(o) = actions.iter().find_map(|a| match a {
        AlterAction::Option(o) if o.name == "COMMENT" => Some(o),
        _ => None,
    }) {
        if !o.value_is_string {
            return Err(CannotMark(
                "the table's COMMENT is not a quoted string; write it as COMMENT = '...'",
            ));
        }
        let close = o.value_span.1.saturating_sub(1);
        let text = if o.value.is_empty() {
            m
        } else {
            format!(" {m}")
        };
        return Ok(vec![(close, text.into_bytes())]);
    }
    if !needed {
        return Ok(Vec::new());
    }
    if multibyte_backslash && !current.is_ascii() {
        return Err(CannotMark(
            "the table's comment cannot be quoted safely in this client character set; run the ALTER with SET NAMES utf8mb4",
        ));
    }
    // only ' is doubled (a backslash is refused below), which reads the same with or without
    // NO_BACKSLASH_ESCAPES
    let mut body: Vec<u8> = Vec::with_capacity(current.len());
    for &b in current {
        if b == b'\'' {
            body.push(b'\'');
        }
        body.push(b);
    }
    if body.contains(&b'\\') {
        return Err(CannotMark(
            "the table's comment contains a backslash; set the COMMENT in this ALTER TABLE",
        ));
    }
    let partition_at = actions.iter().find_map(|a| match a {
        AlterAction::Partition(p) => Some(p.span.0),
        _ => None,
    });
    // always led by a comma; `translate::tidy_alter` drops one that has nothing before it
    let (at, trail) = match partition_at {
        Some(p) => (p, " "),
        None => (end, ""),
    };
    let sep = if current.is_empty() { "" } else { " " };
    // the user's bytes go back as they came, in the client's character set
    let mut text = b", COMMENT = '".to_vec();
    text.extend_from_slice(&body);
    text.extend_from_slice(format!("{sep}{m}'{trail}").as_bytes());
    Ok(vec![(at, text)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::{parse, Statement};
    use crate::sql::splice::Splice;

    fn splice_inserts<T: Into<Vec<u8>>>(sql: &[u8], edits: Vec<(usize, T)>) -> Vec<u8> {
        let mut s = Splice::new();
        for (at, text) in edits {
            s.insert(at, text);
        }
        s.apply(sql)
    }

    fn marker() -> Marker {
        Marker {
            ddl_id: ddl_id(b"CREATE TABLE x"),
            group: None,
        }
    }

    #[test]
    fn render_and_find_round_trip() {
        let m = marker();
        let text = m.render();
        assert!(text.starts_with(TAG) && text.len() == TAG.len() + 64);
        let comment = format!("my notes {text}");
        let (found, at) = Marker::find(comment.as_bytes()).expect("found");
        assert_eq!(found, m);
        assert_eq!(at, 9);
        assert_eq!(user_comment(comment.as_bytes()), b"my notes");
        let g = Marker {
            group: Some("grüppe".as_bytes().to_vec()),
            ..m.clone()
        };
        let (found, _) = Marker::find(g.render().as_bytes()).expect("found");
        assert_eq!(found.group.as_deref(), Some("grüppe".as_bytes()));
        assert_eq!(found.group_of(b"plain"), Some("grüppe".as_bytes().to_vec()));
        assert_eq!(m.group_of("é$f".as_bytes()), Some("é".as_bytes().to_vec()));
        assert_eq!(m.group_of(b"nodollar"), None);
        // damaged or foreign text is no marker
        assert!(Marker::find(b"obkv-hbase:1:xyz").is_none());
        assert!(Marker::find(b"plain comment").is_none());
        assert_eq!(user_comment(b"plain"), b"plain");
    }

    #[test]
    fn ids_are_content_hashes() {
        assert_eq!(ddl_id(b"a"), ddl_id(b"a"));
        assert_ne!(ddl_id(b"a"), ddl_id(b"b"));
        assert_eq!(
            ddl_id(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn folding_and_lock_names() {
        assert_eq!(fold("GrÜppe".as_bytes(), true), "grüppe".as_bytes());
        assert_eq!(fold(b"G", false), b"G");
        assert_eq!(fold(&[0xC9], true), vec![0xC9]);
        let l = lock_name("obkv_meta", b"g");
        assert!(l.len() <= 64);
        assert_ne!(l, lock_name("obkv_meta", b"h"));
        assert_ne!(l, lock_name("other", b"g"));
    }

    fn create(sql: &str) -> CreateTable {
        match parse(sql.as_bytes()).expect("parses") {
            Some(Statement::CreateTable(t)) => *t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn marker_goes_into_the_comment_of_a_create() {
        let m = marker();
        let sql = "CREATE TABLE g$f (K varbinary(10), Q varbinary(10), T bigint, V varbinary(10), PRIMARY KEY(K,Q,T)) PARTITION BY KEY(K) PARTITIONS 3";
        let t = create(sql);
        let out = splice_inserts(sql.as_bytes(), vec![create_edit(&t, &m).expect("edit")]);
        let want = format!(
            "CREATE TABLE g$f (K varbinary(10), Q varbinary(10), T bigint, V varbinary(10), PRIMARY KEY(K,Q,T)) COMMENT = '{}' PARTITION BY KEY(K) PARTITIONS 3",
            m.render()
        );
        assert_eq!(String::from_utf8(out).expect("utf8"), want);
        let sql = "CREATE TABLE g$f (K int) COMMENT 'it''s mine'";
        let t = create(sql);
        let out = splice_inserts(sql.as_bytes(), vec![create_edit(&t, &m).expect("edit")]);
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            format!(
                "CREATE TABLE g$f (K int) COMMENT 'it''s mine {}'",
                m.render()
            )
        );
        let sql = "CREATE TABLE g$f (K int) COMMENT ''";
        let t = create(sql);
        let out = splice_inserts(sql.as_bytes(), vec![create_edit(&t, &m).expect("edit")]);
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            format!("CREATE TABLE g$f (K int) COMMENT '{}'", m.render())
        );
    }

    fn alter(sql: &[u8]) -> Vec<AlterAction> {
        match parse(sql).expect("parses") {
            Some(Statement::AlterTable { actions, .. }) => actions,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn marker_is_kept_by_an_alter() {
        let m = marker();
        let r = m.render();
        let sql = b"ALTER TABLE g$f COMMENT = 'new'";
        let e = alter_edits(&alter(sql), &m, b"old", false, false, sql.len()).expect("ok");
        let tidy = |sql: &[u8], e| crate::hbase::translate::tidy_alter(&splice_inserts(sql, e));
        assert_eq!(
            tidy(sql, e),
            format!("ALTER TABLE g$f COMMENT = 'new {r}'").into_bytes()
        );
        let sql = b"ALTER TABLE g$f PARTITION BY KEY(K) PARTITIONS 5";
        let e = alter_edits(&alter(sql), &m, b"o'ld", true, false, sql.len()).expect("ok");
        assert_eq!(
            tidy(sql, e),
            format!("ALTER TABLE g$f  COMMENT = 'o''ld {r}' PARTITION BY KEY(K) PARTITIONS 5")
                .into_bytes()
        );
        let sql = b"ALTER TABLE g$f KV_ATTRIBUTES = '{}'";
        let e = alter_edits(&alter(sql), &m, &[0xE9], true, false, sql.len()).expect("ok");
        let mut want = b"ALTER TABLE g$f KV_ATTRIBUTES = '{}', COMMENT = '".to_vec();
        want.push(0xE9);
        want.extend_from_slice(format!(" {r}'").as_bytes());
        assert_eq!(tidy(sql, e), want);
        // nothing to do when the definition is unchanged and COMMENT is not touched
        let sql = b"ALTER TABLE g$f ADD COLUMN x int";
        assert!(alter_edits(&alter(sql), &m, b"", false, false, sql.len())
            .expect("ok")
            .is_empty());
        // a backslash or an unsafe charset: refused, not guessed
        assert!(alter_edits(&alter(sql), &m, b"a\\b", true, false, sql.len()).is_err());
        assert!(alter_edits(&alter(sql), &m, &[0x81, 0x5C], true, true, sql.len()).is_err());
    }
}
