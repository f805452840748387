//! The diagnostics area (issue 39): the reader of diagnostics statements and of MariaDB's
//! clearing rule on any text under each dialect; the plan for a held area (a GET DIAGNOSTICS
//! that goes to the backend must read again as GET DIAGNOSTICS, its condition number the only
//! change); the SIGNAL of any message (ASCII, within the backend's limit); the admin
//! listener's HTTP Basic credentials; a result set's row range over any packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::engine::diagnostics::{plan, signal, Area, Condition, Held, Plan};
use obkv_proxy::hbase::rules::Level;
use obkv_proxy::protocol::constants::Caps;
use obkv_proxy::protocol::packets::ErrorInfo;
use obkv_proxy::sql::diagnostics::{keeps_diagnostics, read, Statement};
use obkv_proxy::sql::scan::{Dialect, Flavor};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, sql)) = data.split_first() else {
        return;
    };
    let flavor = match flags & 3 {
        0 => Flavor::MariaDb,
        1 => Flavor::MySql,
        2 => Flavor::OceanBase,
        _ => Flavor::MySqlOrOceanBase,
    };
    let d = Dialect {
        flavor,
        no_backslash_escapes: flags & 4 != 0,
        ansi_quotes: flags & 8 != 0,
        multibyte_backslash: flags & 16 != 0,
        ..Dialect::default()
    };
    let stmt = read(sql, d);
    let _ = keeps_diagnostics(sql, d);
    let own = (0..usize::from(flags >> 6))
        .map(|i| {
            Condition::new(
                Level::Note,
                1000 + i as u16,
                "HY000",
                sql.get(..i * 7).unwrap_or(sql),
            )
        })
        .collect();
    let held = Held {
        own,
        backend: (flags & 32 != 0).then_some(3),
        carried: false,
    };
    let area = Area::of(flavor);
    match plan(&held, stmt.as_ref(), sql, area) {
        Plan::Get {
            forward: Some(f), ..
        } => {
            // the backend runs the client's statement, at most its condition number changed
            assert!(matches!(read(&f, d), Some(Statement::Get(_))), "{f:?}");
        }
        Plan::Patch(values) => match &stmt {
            Some(Statement::Select(c)) => assert_eq!(values.len(), c.len()),
            Some(Statement::Count { .. }) => assert_eq!(values.len(), 1),
            other => panic!("a patch for {other:?}"),
        },
        _ => {}
    }
    let e = ErrorInfo::new(1235, "42000", String::from_utf8_lossy(sql));
    if let Some((s, cut)) = signal(&e, area) {
        assert!(s.is_ascii());
        let s = String::from_utf8_lossy(&s);
        let whole: String = e.message.bytes().map(|b| format!("{b:02X}")).collect();
        // whole, or cut at a character boundary to a prefix of it
        let sent = s.rsplit("X'").next().unwrap_or("").trim_end_matches('\'');
        if e.message.is_empty() {
            assert!(!cut);
        } else {
            assert_eq!(cut, sent != whole, "{s}");
            assert!(whole.starts_with(sent));
        }
    }
    let _ = obkv_proxy::server::admin_http::basic_credentials(sql);
    let packets: Vec<Vec<u8>> = sql
        .chunks(usize::from(flags % 7) + 1)
        .map(<[u8]>::to_vec)
        .collect();
    if let Some(r) = obkv_proxy::backend::row_range(&packets, Caps::classic(u32::from(flags))) {
        assert!(r.end < packets.len() && r.start <= r.end);
    }
});
