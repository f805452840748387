//! The INSERT reader and the cell rules: any bytes, under the dialect bits of the first byte
//! (NO_BACKSLASH_ESCAPES, ANSI_QUOTES, multibyte backslash). Every row handed out is judged as
//! the router will judge it; offsets must lie inside the text and close on `)` for VALUES rows.
#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;

use obkv_proxy::hbase::cells::{check_cell, Cell, CellLimits, Convention, Seen, Window};
use obkv_proxy::sql::insert::{
    picking_agrees, read, read_head, read_head_resumable, read_lexed, read_lexed_after, Read,
    Source, Value,
};
use obkv_proxy::sql::scan::{Dialect, Flavor, Scanner, Token};

fn seen<'a>(v: Option<&'a Value<'_>>) -> Seen<'a> {
    match v {
        None => Seen::Absent,
        Some(Value::Bytes { bytes, .. }) => Seen::Bytes(bytes),
        Some(Value::Int(n)) => Seen::Int(*n),
        Some(Value::Null) => Seen::Null,
        Some(_) => Seen::Unknown,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    let d = Dialect {
        flavor: Flavor::MariaDb,
        version: 101119,
        no_backslash_escapes: flags & 1 != 0,
        ansi_quotes: flags & 2 != 0,
        multibyte_backslash: flags & 4 != 0,
        plain_comments: false,
    };
    let limits = CellLimits {
        k: Some(8),
        q: Some(4),
        v: Some(16),
        prefix_column: Some("K_PREFIX".into()),
        columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
    };
    let mut findings = Vec::new();
    // every row as handed out, to compare the two token sources
    type Rows = Vec<(Vec<Value<'static>>, Vec<(usize, usize)>, usize)>;
    let mut lexing: Rows = Vec::new();
    let r = read(sql, d, |head, row| {
        lexing.push((
            row.values.iter().cloned().map(Value::into_owned).collect(),
            row.spans.to_vec(),
            row.close,
        ));
        assert!(row.close <= sql.len());
        // every value's span lies before the row's close, in order, one per value
        assert!(row.spans.is_empty() || row.spans.len() == row.values.len());
        let mut last = 0;
        for &(a, b) in row.spans {
            assert!(
                a <= b && b <= row.close && a >= last,
                "{a} {b} {}",
                row.close
            );
            last = b;
        }
        if head.source == Source::Values {
            assert_eq!(sql.get(row.close), Some(&b')'));
        }
        let cell = Cell {
            k: seen(row.values.first()),
            q: seen(row.values.get(1)),
            t: seen(row.values.get(2)),
            v: seen(row.values.get(3)),
        };
        let convention = if flags & 8 != 0 {
            Convention::Ms
        } else {
            Convention::NegatedMs
        };
        check_cell(
            &cell,
            &limits,
            convention,
            Window::default(),
            row.index + 1,
            &mut findings,
        );
        findings.clear();
        ControlFlow::Continue(())
    });
    if let Read::Insert { head, .. } = &r {
        if let Some(c) = head.columns_close {
            assert_eq!(sql.get(c), Some(&b')'));
        }
        // the head alone reads the same table
        match read_head(sql, d, None) {
            Ok(Some(h)) => assert_eq!(h.table, head.table),
            other => panic!("head {other:?} of a read INSERT"),
        }
    }
    if r == Read::NotInsert {
        assert_eq!(read_head(sql, d, None), Ok(None));
    }
    // over the tokens a split keeps (the whole text lexed first), the reader reads exactly
    // what it reads lexing
    let Ok(tokens) = Scanner::new(sql, d).collect::<Result<Vec<Token>, _>>() else {
        return;
    };
    let mut kept: Rows = Vec::new();
    let again = read_lexed(sql, d, Some(&tokens), |_, row| {
        kept.push((
            row.values.iter().cloned().map(Value::into_owned).collect(),
            row.spans.to_vec(),
            row.close,
        ));
        ControlFlow::Continue(())
    });
    assert_eq!(again, r);
    assert_eq!(kept, lexing);
    // going on after a head read over the same tokens (as the router hands it to the checks)
    // reads what reading whole does
    if let Ok(Some(head)) = read_head_resumable(sql, d, Some(&tokens)) {
        let mut after: Rows = Vec::new();
        let resumed = read_lexed_after(sql, d, Some(&tokens), Some(head), |_, row| {
            after.push((
                row.values.iter().cloned().map(Value::into_owned).collect(),
                row.spans.to_vec(),
                row.close,
            ));
            ControlFlow::Continue(())
        });
        assert_eq!(resumed, r);
        assert_eq!(after, lexing);
        // rows handed with four columns picked in their plain form hold what the values say
        // (the columns picked from the flags' high bits: an index, or none)
        let pick = [(flags >> 4) & 3, (flags >> 5) & 7, flags >> 6, (flags >> 3) & 1]
            .map(|c| (c != 3).then_some(usize::from(c)));
        picking_agrees(sql, d, pick);
    }
    let head = read_head(sql, d, None);
    assert_eq!(read_head(sql, d, Some(&tokens)), head);
});
