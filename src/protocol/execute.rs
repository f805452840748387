//! COM_STMT_EXECUTE as the proxy reads and rebuilds it for the prefix-scan rewriter: the
//! statement id, the bound parameters (null bitmap, types, values) and a packet for another
//! statement with values inserted. Pure; every length is checked against the packet before it
//! is used, nothing is indexed on trust. Query attributes are not negotiated (see
//! `cap::PROXY_SUPPORTED`), so the packet is always the classic layout:
//!
//! `0x17 | id u32 | flags u8 | iterations u32 | null bitmap | new-params-bound u8 | [types 2·n] | values`
//!
//! MariaDB's COM_STMT_BULK_EXECUTE is read row by row for the write rules (`parse_bulk`,
//! `BulkRows`).

use super::constants::com;
use super::wire::{put_lenenc_bytes, Reader};

/// MYSQL_TYPE_BLOB: binary on both backends, but OceanBase plans a LOB-typed value without
/// partition pruning (measured on seekdb 1.4): used for a prefix whose bytes a string would not
/// carry unchanged.
pub const TYPE_BLOB: u8 = 0xfc;
/// MYSQL_TYPE_VAR_STRING: what drivers bind strings with; both backends prune with it.
pub const TYPE_VAR_STRING: u8 = 0xfd;

/// A COM_STMT_EXECUTE for a statement with `params` parameters, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute<'a> {
    pub id: u32,
    pub flags: u8,
    pub iterations: u32,
    pub nulls: &'a [u8],
    /// The types as sent (2 bytes each), when the client bound new types.
    pub types: Option<&'a [u8]>,
    pub values: &'a [u8],
}

/// Reads an execute packet (the command byte included). None when it is not one for a
/// statement with `params` parameters (the backend then answers it as it is).
pub fn parse(cmd: &[u8], params: usize) -> Option<Execute<'_>> {
    let mut r = Reader::new(cmd);
    if r.u8()? != com::STMT_EXECUTE || params == 0 {
        return None;
    }
    let id = r.u32()?;
    let flags = r.u8()?;
    let iterations = r.u32()?;
    let nulls = r.take(params.div_ceil(8))?;
    let bound = r.u8()?;
    let types = match bound {
        0 => None,
        1 => Some(r.take(params.checked_mul(2)?)?),
        _ => return None,
    };
    Some(Execute {
        id,
        flags,
        iterations,
        nulls,
        types,
        values: r.remaining(),
    })
}

/// What `parse` reads of the parameter types, without reading the rest: None where `parse`
/// is None, else the types the execution sends (None: it sends none). For the usual
/// execution of a multiplexed session, which needs only that.
#[inline]
pub fn sent_types(cmd: &[u8], params: usize) -> Option<Option<&[u8]>> {
    if params == 0 || cmd.first() != Some(&com::STMT_EXECUTE) {
        return None;
    }
    // command, id (4), flags, iterations (4), the NULL bitmap, then the bound flag
    let at = params.div_ceil(8).checked_add(10)?;
    match cmd.get(at)? {
        0 => Some(None),
        1 => {
            let from = at + 1;
            Some(Some(
                cmd.get(from..from.checked_add(params.checked_mul(2)?)?)?,
            ))
        }
        _ => None,
    }
}

/// Where a parameter's value lies in an execution's values: (start, end), None for a NULL.
/// 32 bits are enough (a command is at most `max_allowed_packet`, 1 GiB), and keep `Spans`
/// small enough to move without a copy call.
pub type Span = Option<(u32, u32)>;

/// Each parameter's `Span`; inline for the few parameters of most statements.
pub type Spans = smallvec::SmallVec<[Span; 4]>;

/// A `Span`'s bounds as indexes of the values.
#[inline]
pub fn span_range((start, end): (u32, u32)) -> (usize, usize) {
    (start as usize, end as usize)
}

/// Where each parameter's value lies in `values` (None: NULL), given the types in force.
/// None when a type has no known binary size or a value runs past the packet.
pub fn value_spans(nulls: &[u8], types: &[u8], values: &[u8]) -> Option<Spans> {
    let n = types.len() / 2;
    let mut out = Spans::with_capacity(n);
    let mut r = Reader::new(values);
    for i in 0..n {
        let null = nulls.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
        if null {
            out.push(None);
            continue;
        }
        let start = u32::try_from(r.pos()).ok()?;
        skip_value(&mut r, *types.get(2 * i)?)?;
        out.push(Some((start, u32::try_from(r.pos()).ok()?)));
    }
    Some(out)
}

/// One parameter of a bulk execute row: MariaDB's indicator and, for a value, where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkValue {
    Value(usize, usize),
    Null,
    /// DEFAULT (2) or IGNORE (3): the column's default.
    Default,
}

/// A COM_STMT_BULK_EXECUTE (MariaDB), read:
/// `0xFA | id u32 | flags u16 | [types 2·n if flags & 128] | rows until the end`, each row a
/// one-byte indicator per parameter (0 value, 1 NULL, 2 DEFAULT, 3 IGNORE) followed, for a
/// value, by its binary form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bulk<'a> {
    pub id: u32,
    pub flags: u16,
    pub types: Option<&'a [u8]>,
    pub rows: &'a [u8],
}

/// SEND_TYPES_TO_SERVER in a bulk execute's flags.
pub const BULK_SEND_TYPES: u16 = 128;

/// Reads a bulk execute packet for a statement with `params` parameters.
pub fn parse_bulk(cmd: &[u8], params: usize) -> Option<Bulk<'_>> {
    let mut r = Reader::new(cmd);
    if r.u8()? != com::STMT_BULK_EXECUTE || params == 0 {
        return None;
    }
    let id = r.u32()?;
    let lo = r.u8()?;
    let hi = r.u8()?;
    let flags = u16::from_le_bytes([lo, hi]);
    let types = if flags & BULK_SEND_TYPES != 0 {
        Some(r.take(params.checked_mul(2)?)?)
    } else {
        None
    };
    Some(Bulk {
        id,
        flags,
        types,
        rows: r.remaining(),
    })
}

/// The rows of a bulk execute, one at a time, given the types in force: each row's values into
/// `out` (cleared first). None at the end; Some(false) when a row cannot be read (an unknown
/// indicator or type, a value past the packet) — the rest is then not read.
pub struct BulkRows<'a> {
    types: &'a [u8],
    r: Reader<'a>,
    broken: bool,
}

impl<'a> BulkRows<'a> {
    pub fn new(types: &'a [u8], rows: &'a [u8]) -> Self {
        BulkRows {
            types,
            r: Reader::new(rows),
            broken: false,
        }
    }

    pub fn next_row(&mut self, out: &mut Vec<BulkValue>) -> Option<bool> {
        out.clear();
        if self.broken || self.r.remaining().is_empty() {
            return None;
        }
        let ok = self.read_row(out).is_some();
        self.broken = !ok;
        Some(ok)
    }

    fn read_row(&mut self, out: &mut Vec<BulkValue>) -> Option<()> {
        let n = self.types.len() / 2;
        for i in 0..n {
            match self.r.u8()? {
                0 => {
                    let start = self.r.pos();
                    skip_value(&mut self.r, *self.types.get(2 * i)?)?;
                    out.push(BulkValue::Value(start, self.r.pos()));
                }
                1 => out.push(BulkValue::Null),
                2 | 3 => out.push(BulkValue::Default),
                _ => return None,
            }
        }
        Some(())
    }
}

/// Steps over one binary-protocol value of type `ty`.
fn skip_value(r: &mut Reader<'_>, ty: u8) -> Option<()> {
    match ty {
        0x06 => {}                              // NULL type
        0x01 => drop(r.take(1)?),               // TINY
        0x02 | 0x0d => drop(r.take(2)?),        // SHORT, YEAR
        0x03 | 0x09 | 0x04 => drop(r.take(4)?), // LONG, INT24, FLOAT
        0x08 | 0x05 => drop(r.take(8)?),        // LONGLONG, DOUBLE
        // TIMESTAMP, DATE, TIME, DATETIME: a length byte and that many bytes
        0x07 | 0x0a | 0x0b | 0x0c => {
            let len = r.u8()?;
            r.take(usize::from(len))?;
        }
        // DECIMAL, VARCHAR, BIT, JSON, NEWDECIMAL, ENUM, SET, the BLOBs, VAR_STRING,
        // STRING, GEOMETRY: length-encoded bytes
        0x00 | 0x0f | 0x10 | 0xf5..=0xff => {
            r.lenenc_bytes()?;
        }
        _ => return None,
    }
    Some(())
}

/// The value of a string-like parameter: its bytes, and whether it is BLOB-typed (binary on
/// both backends) rather than a character string. None for other types.
pub fn string_value(ty: u8, values: &[u8], span: (usize, usize)) -> Option<(&[u8], bool)> {
    let blob = matches!(ty, 0xf9..=0xfc);
    if !(blob || matches!(ty, 0x0f | 0xfd | 0xfe)) {
        return None;
    }
    let mut r = Reader::new(values.get(span.0..span.1)?);
    Some((r.lenenc_bytes()?, blob))
}

/// An execute packet for statement `id` carrying `e`'s parameters with `inserted` (type, value)
/// added at parameter position `at` (types always sent: the target statement may not have
/// seen the client's). `types` are the types in force (`e.types` or the ones remembered).
/// Written into `out`, cleared first (a buffer kept from an earlier execution, or a new one).
pub fn rebuild(
    mut out: Vec<u8>,
    e: &Execute<'_>,
    id: u32,
    types: &[u8],
    spans: Option<&[Span]>,
    at: usize,
    inserted: &[(u8, &[u8])],
) -> Option<Vec<u8>> {
    let n = types.len() / 2;
    if at > n || (!inserted.is_empty() && spans.is_none()) {
        return None;
    }
    let total = n + inserted.len();
    let extra: usize = inserted.iter().map(|(_, v)| v.len() + 9).sum();
    out.clear();
    out.reserve(12 + total.div_ceil(8) + 2 * total + e.values.len() + extra);
    // (the fixed header in one piece: one capacity check, no copy call)
    let [i0, i1, i2, i3] = id.to_le_bytes();
    let [n0, n1, n2, n3] = e.iterations.to_le_bytes();
    out.extend_from_slice(&[com::STMT_EXECUTE, i0, i1, i2, i3, e.flags, n0, n1, n2, n3]);
    let old_null = |i: usize| e.nulls.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
    let start = out.len();
    out.resize(start + total.div_ceil(8), 0);
    if let Some(nulls) = out.get_mut(start..) {
        for j in 0..total {
            let null = match j {
                j if j < at => old_null(j),
                j if j < at + inserted.len() => false,
                j => old_null(j - inserted.len()),
            };
            if null {
                if let Some(b) = nulls.get_mut(j / 8) {
                    *b |= 1 << (j % 8);
                }
            }
        }
    }
    out.push(1);
    out.extend_from_slice(types.get(..2 * at)?);
    for (ty, _) in inserted {
        out.extend_from_slice(&[*ty, 0]);
    }
    out.extend_from_slice(types.get(2 * at..)?);
    // values: those of the parameters before `at`, the inserted ones, the rest
    let split = match spans {
        Some(spans) => spans
            .get(..at)?
            .iter()
            .rev()
            .find_map(|s| s.map(|(_, end)| end as usize))
            .unwrap_or(0),
        None => e.values.len(),
    };
    out.extend_from_slice(e.values.get(..split)?);
    for (_, v) in inserted {
        put_lenenc_bytes(&mut out, v);
    }
    out.extend_from_slice(e.values.get(split..)?);
    Some(out)
}

/// The statement id of a command that names one (execute, fetch, reset, close, long data).
pub fn statement_id(cmd: &[u8]) -> Option<u32> {
    let b = cmd.get(1..5)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// `cmd` with its statement id replaced.
pub fn with_statement_id(cmd: &mut [u8], id: u32) {
    if let Some(b) = cmd.get_mut(1..5) {
        b.copy_from_slice(&id.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_types_reads_what_parse_reads() {
        let t = [0x08u8, 0, 0xfd, 0];
        let cases = [
            packet(3, &[0], Some(&t), b"12345678\x01a"),
            packet(3, &[0], None, b"12345678\x01a"),
            packet(3, &[0], Some(&t[..3]), b""),
            packet(3, &[], None, b""),
            vec![com::STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2],
            vec![com::STMT_BULK_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0],
            vec![],
        ];
        for cmd in &cases {
            for params in 0..=3 {
                assert_eq!(
                    sent_types(cmd, params),
                    parse(cmd, params).map(|e| e.types),
                    "{cmd:?} with {params} parameters"
                );
            }
        }
        // (the cases do not all read alike)
        assert_eq!(sent_types(&cases[0], 2), Some(Some(&t[..])));
        assert_eq!(sent_types(&cases[1], 2), Some(None));
        assert_eq!(sent_types(&cases[2], 2), None);
    }

    fn packet(id: u32, nulls: &[u8], types: Option<&[u8]>, values: &[u8]) -> Vec<u8> {
        let mut p = vec![com::STMT_EXECUTE];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(0);
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(nulls);
        match types {
            Some(t) => {
                p.push(1);
                p.extend_from_slice(t);
            }
            None => p.push(0),
        }
        p.extend_from_slice(values);
        p
    }

    #[test]
    fn values_are_found_by_type_and_a_value_is_inserted() {
        // (?, ?, ?) = ('ab', NULL, 7 as LONGLONG)
        let types = [0xfd, 0, 0xfe, 0, 0x08, 0];
        let mut values = vec![2, b'a', b'b'];
        values.extend_from_slice(&7u64.to_le_bytes());
        let p = packet(5, &[0b010], Some(&types), &values);
        let e = parse(&p, 3).unwrap();
        assert_eq!(e.id, 5);
        let spans = value_spans(e.nulls, e.types.unwrap(), e.values).unwrap();
        assert_eq!(spans.to_vec(), vec![Some((0, 3)), None, Some((3, 11))]);
        assert_eq!(
            string_value(0xfd, e.values, span_range(spans[0].unwrap())),
            Some((&b"ab"[..], false))
        );
        // insert one value after the second parameter: the NULL keeps its place
        let out = rebuild(
            Vec::new(),
            &e,
            9,
            &types,
            Some(&spans),
            2,
            &[(TYPE_BLOB, b"pq")],
        )
        .unwrap();
        let r = parse(&out, 4).unwrap();
        assert_eq!(r.id, 9);
        assert_eq!(r.nulls, &[0b0010]);
        assert_eq!(r.types.unwrap(), &[0xfd, 0, 0xfe, 0, TYPE_BLOB, 0, 0x08, 0]);
        let spans = value_spans(r.nulls, r.types.unwrap(), r.values).unwrap();
        assert_eq!(
            string_value(TYPE_BLOB, r.values, span_range(spans[2].unwrap())),
            Some((&b"pq"[..], true))
        );
        assert_eq!(
            &r.values[spans[3].unwrap().0 as usize..],
            &7u64.to_le_bytes()
        );
        // nothing inserted, types remembered: the same values, types now sent
        let bare = packet(5, &[0b010], None, &values);
        let e = parse(&bare, 3).unwrap();
        let out = rebuild(Vec::new(), &e, 5, &types, None, 0, &[]).unwrap();
        assert_eq!(out, p);
    }

    #[test]
    fn malformed_packets_are_not_read() {
        assert!(parse(&[com::STMT_EXECUTE, 1, 0], 1).is_none());
        let p = packet(1, &[0], Some(&[0xfd, 0]), &[5, b'a']); // value shorter than its length
        let e = parse(&p, 1).unwrap();
        assert!(value_spans(e.nulls, e.types.unwrap(), e.values).is_none());
        let p = packet(1, &[0], Some(&[0x42, 0]), &[1]); // unknown type
        let e = parse(&p, 1).unwrap();
        assert!(value_spans(e.nulls, e.types.unwrap(), e.values).is_none());
        assert!(parse(&packet(1, &[0], Some(&[0xfd]), &[]), 1).is_none());
    }

    #[test]
    fn bulk_rows_are_read_one_by_one() {
        // (?, ?) x 3 rows: ('ab', 7), (NULL, DEFAULT), ('', 1)
        let mut p = vec![com::STMT_BULK_EXECUTE];
        p.extend_from_slice(&9u32.to_le_bytes());
        p.extend_from_slice(&BULK_SEND_TYPES.to_le_bytes());
        p.extend_from_slice(&[0xfd, 0, 0x08, 0]);
        p.extend_from_slice(&[0, 2, b'a', b'b', 0]);
        p.extend_from_slice(&7u64.to_le_bytes());
        p.extend_from_slice(&[1, 2]);
        p.extend_from_slice(&[0, 0, 0]);
        p.extend_from_slice(&1u64.to_le_bytes());
        let b = parse_bulk(&p, 2).unwrap();
        assert_eq!((b.id, b.types), (9, Some(&[0xfd, 0, 0x08, 0][..])));
        let mut rows = BulkRows::new(b.types.unwrap(), b.rows);
        let mut row = Vec::new();
        assert_eq!(rows.next_row(&mut row), Some(true));
        assert_eq!(row, vec![BulkValue::Value(1, 4), BulkValue::Value(5, 13)]);
        assert_eq!(
            string_value(0xfd, b.rows, (1, 4)),
            Some((&b"ab"[..], false))
        );
        assert_eq!(rows.next_row(&mut row), Some(true));
        assert_eq!(row, vec![BulkValue::Null, BulkValue::Default]);
        assert_eq!(rows.next_row(&mut row), Some(true));
        assert_eq!(row.len(), 2);
        assert_eq!(rows.next_row(&mut row), None);
        // a truncated row, an unknown indicator: not read, and nothing after it
        let cut = &p[..p.len() - 3];
        let b = parse_bulk(cut, 2).unwrap();
        let mut rows = BulkRows::new(b.types.unwrap(), b.rows);
        assert_eq!(rows.next_row(&mut row), Some(true));
        assert_eq!(rows.next_row(&mut row), Some(true));
        assert_eq!(rows.next_row(&mut row), Some(false));
        assert_eq!(rows.next_row(&mut row), None);
        let mut rows = BulkRows::new(&[0xfd, 0], &[9]);
        assert_eq!(rows.next_row(&mut row), Some(false));
        // no types sent: none read; a packet that is not a bulk execute
        let mut q = p[..7].to_vec();
        q[5] = 0;
        assert_eq!(parse_bulk(&q, 2).unwrap().types, None);
        assert!(parse_bulk(&p, 0).is_none());
        assert!(parse_bulk(&p[..5], 2).is_none());
    }
}
