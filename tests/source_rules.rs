//! Rules about the source itself, checked in the test command (no backend needed):
//! - every MySQL/MariaDB error code is written as a named constant of
//!   `protocol::constants::er`, never as a number elsewhere;
//! - the layers import only the ones before them, and no two source files import each other
//!   (directly or around a circle).
//!
//! Test modules (`#[cfg(test)]` to the end of a file) may look anywhere: they are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers from the ground up; a file may import its own layer's files and the layers before.
const LAYERS: &[&[&str]] = &[
    &["timer", "clock"],
    &["protocol"],
    &["sql"],
    &["hbase"],
    &["config"],
    &["tls"],
    &["net"],
    &["engine"],
    &["backend"],
    &["admin"],
    &["watch"],
    &["shared"],
    &["ttl"],
    &["session"],
    &["server"],
    &["lib", "main"],
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("src readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A file's code without its test module, comments and string/char literals' contents.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("source readable");
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            (b'r', Some(b'"' | b'#'))
                if i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') =>
            {
                // raw string r"…" / r#"…"#
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            (b'"', _) => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            (b'\'', _) => {
                // a char literal ('a', '\n', b'x') — not a lifetime ('a followed by no quote)
                let close = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match close {
                    Some(c) => {
                        out.push_str("' '");
                        i = c + 1;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            (c, _) => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The error codes named in `protocol::constants::er`.
fn error_codes() -> BTreeSet<u32> {
    let text =
        std::fs::read_to_string(root().join("src/protocol/constants.rs")).expect("constants");
    let start = text.find("pub mod er {").expect("the er module");
    let body = &text[start..];
    let body = &body[..body.find("\n}\n").expect("its end")];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.rsplit('=').next())
        .filter_map(|v| v.trim().trim_end_matches(';').parse().ok())
        .collect()
}

/// Four-digit integer literals of a line of code (no digit separator, not part of a word or a
/// float).
fn four_digit_literals(line: &str) -> Vec<u32> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'))
        {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let next = b.get(i).copied();
            let ends = !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.');
            if i - start == 4 && ends {
                if let Ok(n) = line[start..i].parse() {
                    out.push(n);
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn error_codes_are_named_constants_of_one_file() {
    let codes = error_codes();
    assert!(codes.contains(&1064) && codes.contains(&1235), "{codes:?}");
    let mut found = Vec::new();
    for path in sources() {
        if path.ends_with("src/protocol/constants.rs") {
            continue;
        }
        let code = code_of(&path);
        for (n, line) in code.lines().enumerate() {
            let in_error_context = line.contains("ErrorInfo::new(")
                || line.contains("code:")
                || line.contains("parse_err_code");
            for lit in four_digit_literals(line) {
                // a known code anywhere, or any 4-digit number where an error code goes
                if codes.contains(&lit) || (in_error_context && (1000..5000).contains(&lit)) {
                    found.push(format!("{}:{}: {lit}: {}", rel(&path), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "error codes written as numbers (name them in protocol::constants::er):\n{}",
        found.join("\n")
    );
}

/// The module a file is (`sql/dml`, `session`, `lib`), and its top-level part.
fn module_of(path: &Path) -> Vec<String> {
    let r = path.strip_prefix(root().join("src")).expect("under src");
    let mut parts: Vec<String> = r
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// File-level imports: every `crate::a::b` path (and `super::x` inside a folder) resolved to
/// the longest module that exists.
fn imports() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = sources();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|p| module_of(p)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for path in &files {
        let me = module_of(path);
        let code = code_of(path);
        let is_mod_rs = path.ends_with("mod.rs");
        let mut add = |target: Vec<String>| {
            if target != me && !target.is_empty() {
                edges.entry(me.clone()).or_default().insert(target);
            }
        };
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", {
                // `super` of a file is its folder's module; of a mod.rs, the folder's parent
                let mut b = me.clone();
                b.pop();
                if is_mod_rs {
                    // mod.rs is the folder itself: its super is one up
                    b = me.clone();
                    b.pop();
                }
                b
            }),
        ] {
            let mut rest = code.as_str();
            while let Some(at) = rest.find(prefix) {
                let before = rest[..at].chars().last();
                rest = &rest[at + prefix.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                // the path's words, also inside one level of `{…}` for use-lists
                let end = rest
                    .find(|c: char| {
                        !(c.is_alphanumeric()
                            || c == '_'
                            || c == ':'
                            || c == '{'
                            || c == '}'
                            || c == ','
                            || c == ' '
                            || c == '\n'
                            || c == '*')
                    })
                    .unwrap_or(rest.len());
                let text = &rest[..end];
                let heads: Vec<String> = {
                    let head: String = text.split('{').next().unwrap_or("").to_string();
                    let mut out = vec![head.clone()];
                    if let (Some(open), Some(close)) = (text.find('{'), text.find('}')) {
                        if open < close {
                            for item in text[open + 1..close].split(',') {
                                out.push(format!("{head}{}", item.trim()));
                            }
                        }
                    }
                    out
                };
                for h in heads {
                    let words: Vec<String> = h
                        .split("::")
                        .map(str::trim)
                        .filter(|w| {
                            !w.is_empty()
                                && w.chars().all(|c| {
                                    c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()
                                })
                        })
                        .map(str::to_string)
                        .collect();
                    let mut path = base.clone();
                    path.extend(words);
                    while !path.is_empty() && !modules.contains(&path) {
                        path.pop();
                    }
                    add(path);
                }
            }
        }
    }
    edges
}

fn layer_of(module: &[String]) -> Option<usize> {
    let top = module.first().map_or("lib", String::as_str);
    LAYERS.iter().position(|l| l.contains(&top))
}

#[test]
fn layers_import_only_what_stands_before_them() {
    let edges = imports();
    let mut wrong = Vec::new();
    for (from, tos) in &edges {
        let Some(a) = layer_of(from) else {
            wrong.push(format!(
                "{} is in no layer (add it to LAYERS)",
                from.join("/")
            ));
            continue;
        };
        for to in tos {
            match layer_of(to) {
                Some(b) if b <= a => {}
                _ => wrong.push(format!("{} imports {}", from.join("/"), to.join("/"))),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_files_import_each_other_in_a_circle() {
    let edges = imports();
    // Tarjan's strongly connected components, iteratively
    let nodes: Vec<&Vec<String>> = edges.keys().collect();
    let index_of: BTreeMap<&Vec<String>, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            edges[*n]
                .iter()
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut circles) = (Vec::new(), 0, Vec::new());
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some((v, i)) = work.pop() {
            if i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(i) {
                work.push((v, i + 1));
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(nodes[w].join("/"));
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    circles.push(comp.join(" → "));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "source files importing each other:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_checks_see_what_they_check() {
    // a layering violation and a numbered code would be found: the readers work
    assert_eq!(
        four_digit_literals("ErrorInfo::new(1064, x) 1_064 10640 1.5 v1064"),
        [1064]
    );
    let edges = imports();
    let session = edges
        .get(&vec!["session".to_string()])
        .expect("session imports");
    assert!(
        session.contains(&vec!["engine".to_string(), "router".to_string()]),
        "{session:?}"
    );
    assert!(layer_of(&["sql".into(), "dml".into()]) < layer_of(&["engine".into()]));
}

/// The rule and verdict functions of the model and the engine's internals: the session calls
/// the engine's decisions (`engine::decide`, `engine::execute`, `engine::ddl`), never these.
const POLICY_FUNCTIONS: &[&str] = &[
    "verdict",
    "judge",
    "guard",
    "check_create",
    "check_alter",
    "check_rename",
    "check_create_index",
    "check_partitioning",
    "check_kv_attributes",
    "check_cell",
    "check_t",
    "check_prefix_column_written",
    "check_cell_address_changed",
    "check_insert",
    "check_dml",
    "check_execution",
    "load_unchecked",
];

#[test]
fn the_session_calls_no_rule_or_verdict_function() {
    let mut found = Vec::new();
    for path in sources() {
        if module_of(&path).first().is_none_or(|m| m != "session") {
            continue;
        }
        let code = code_of(&path);
        for (n, line) in code.lines().enumerate() {
            for f in POLICY_FUNCTIONS {
                // a call: the name right after `::`, `.` or a non-word character, then `(`
                let mut rest = line;
                while let Some(at) = rest.find(&format!("{f}(")) {
                    let before = rest[..at].chars().last();
                    let is_call = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    let defines = rest[..at].trim_end().ends_with("fn");
                    if is_call && !defines {
                        found.push(format!("{}:{}: {}", rel(&path), n + 1, line.trim()));
                    }
                    rest = &rest[at + f.len() + 1..];
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the session decides (call the engine instead):\n{}",
        found.join("\n")
    );
}
