//! LOAD DATA: the statement reader, and the file reader fed whole and in pieces (the rows must
//! not depend on where the pieces end); MariaDB's bulk execute rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::sql::load::{self, FileRows, Next};
use obkv_proxy::sql::scan::Dialect;

fn rows(r: &mut FileRows, file: &[u8], chunk: usize) -> Vec<Next> {
    let mut out = Vec::new();
    for piece in file.chunks(chunk.max(1)) {
        r.feed(piece);
        loop {
            match r.next_row() {
                Next::More => break,
                n => {
                    let end = !matches!(n, Next::Row(_));
                    out.push(n);
                    if end {
                        return out;
                    }
                }
            }
        }
    }
    r.finish();
    loop {
        let n = r.next_row();
        let end = !matches!(n, Next::Row(_));
        out.push(n);
        if end || out.len() > 100_000 {
            return out;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // statement \0 file
    let (sql, file) = match memchr_zero(data) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let _ = load::read(sql, Dialect::default());
    // the file in a format chosen by its first bytes
    let Some((&sel, file)) = file.split_first() else {
        return;
    };
    let pick = |i: u8| [b'\t', b',', b'\n', b'"', b'\\', b'\r', b'x', 0x81][usize::from(i % 8)];
    let format = load::Format {
        field_term: vec![pick(sel)],
        enclosed: (sel & 0x08 != 0).then_some(b'"'),
        escaped: (sel & 0x10 != 0).then_some(b'\\'),
        line_start: if sel & 0x20 != 0 {
            b"xx".to_vec()
        } else {
            Vec::new()
        },
        line_term: if sel & 0x40 != 0 {
            b"\r\n".to_vec()
        } else {
            b"\n".to_vec()
        },
        charset: (sel & 0x80 != 0).then(|| "latin1".to_string()),
    };
    if format.unreadable().is_some() {
        return;
    }
    let columns = usize::from(sel % 5) + 1;
    let whole = rows(
        &mut FileRows::new(format.clone(), columns, 1, 1 << 20),
        file,
        file.len(),
    );
    for chunk in [1, 3, 64] {
        let pieces = rows(
            &mut FileRows::new(format.clone(), columns, 1, 1 << 20),
            file,
            chunk,
        );
        assert_eq!(whole, pieces, "rows depend on where the pieces end");
    }
    // a bulk execute's rows from the same bytes
    use obkv_proxy::protocol::execute::{BulkRows, BulkValue};
    let types = [0xfd, 0, 0x08, 0, 0x0c, 0];
    let mut r = BulkRows::new(&types, file);
    let mut row = Vec::new();
    while let Some(true) = r.next_row(&mut row) {
        for v in &row {
            if let BulkValue::Value(a, z) = v {
                assert!(a <= z && *z <= file.len());
            }
        }
    }
});

fn memchr_zero(d: &[u8]) -> Option<usize> {
    d.iter().position(|b| *b == 0)
}
