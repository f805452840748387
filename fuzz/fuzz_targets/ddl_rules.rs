//! The DDL reader, the rules and the per-backend translation; the marker spliced into CREATE
//! and ALTER and read back from comments; the SHOW ... LIKE matcher.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obkv_proxy::hbase::backend::Flavor;
use obkv_proxy::hbase::catalog::like;
use obkv_proxy::hbase::live::{self, Shape};
use obkv_proxy::hbase::marker::{self, Marker};
use obkv_proxy::hbase::partition::ModelPartitioning;
use obkv_proxy::hbase::rules::{check_alter, check_create, check_rename, GroupState, RuleConfig};
use obkv_proxy::hbase::translate::{create_table, tidy_alter};
use obkv_proxy::sql::ddl::{parse, Statement};

fuzz_target!(|data: &[u8]| {
    let cfg = RuleConfig {
        require_tablegroup_option: data.first().is_some_and(|b| b & 1 != 0),
        multiple_families: data.first().is_some_and(|b| b & 2 != 0),
    };
    // a comment from the backend: any bytes
    if let Some((m, at)) = Marker::find(data) {
        assert!(at < data.len());
        let _ = m.group_of(data);
        assert_eq!(Marker::find(m.render().as_bytes()).map(|x| x.0), Some(m));
    }
    let _ = marker::user_comment(data);
    let _ = marker::fold(data, true);
    let mk = Marker {
        ddl_id: marker::ddl_id(data),
        group: data.get(..3).map(<[u8]>::to_vec),
    };
    if let Ok(Some(stmt)) = parse(data) {
        let group = GroupState {
            exists: true,
            families: Vec::new(),
        };
        match &stmt {
            Statement::CreateTable(t) => {
                let _ = check_create(t, cfg, &group);
                for f in [Flavor::OceanBase, Flavor::SeekDb, Flavor::MySqlFamily] {
                    let edit = marker::create_edit(t, &mk).ok();
                    let tr = create_table(t, data, f, b"db", edit);
                    assert!(!tr.create.is_empty() || data.is_empty());
                }
                let _ = t.model_partitioning();
                // a table made without the proxy: what adoption records must read back as the
                // same HBase table
                if let Shape::Hbase { def, .. } = live::recognize(t) {
                    let shown =
                        String::from_utf8_lossy(&live::model_ddl((*def).clone(), data, Some("g")))
                            .into_owned();
                    match parse(shown.as_bytes()) {
                        Ok(Some(Statement::CreateTable(back))) => {
                            assert_eq!(
                                back.model_partitioning(),
                                def.model_partitioning(),
                                "{shown}"
                            );
                            assert_eq!(back.prefix_column(), def.prefix_column(), "{shown}");
                        }
                        other => panic!("{shown}: {other:?}"),
                    }
                }
            }
            Statement::AlterTable { actions, .. } => {
                if let Ok(Some(Statement::CreateTable(base))) = parse(
                    b"CREATE TABLE g$f (K varbinary(1024), Q varbinary(256), T bigint, V varbinary(1024) NOT NULL, PRIMARY KEY (K, Q, T)) TABLEGROUP = g PARTITION BY KEY(K) PARTITIONS 97",
                ) {
                    let _ = check_alter(&base, actions, cfg, &group);
                }
                if let Ok(e) = marker::alter_edits(actions, &mk, data, true, false, data.len()) {
                    let mut s = obkv_proxy::sql::splice::Splice::new();
                    for (at, text) in e {
                        s.insert(at, text);
                    }
                    let _ = tidy_alter(&s.apply(data));
                }
            }
            Statement::RenameTable(pairs) => {
                for (a, b) in pairs {
                    let _ = check_rename(a, b);
                }
            }
            _ => {}
        }
    }
    // LIKE: the first half is the pattern, the second the name
    let text = String::from_utf8_lossy(data);
    let chars: Vec<char> = text.chars().collect();
    let (p, t) = chars.split_at(chars.len() / 2);
    let p: String = p.iter().collect();
    let t: String = t.iter().collect();
    let _ = like(&p, &t);
    // KV_ATTRIBUTES as the TTL task and the reads read it, and the duty window: a text R9
    // accepts declares what it says
    let attrs = obkv_proxy::hbase::ttl::Attributes::parse(&text);
    if obkv_proxy::hbase::rules::check_kv_attributes(&text).is_err() {
        // refused texts never reach a table; reading one must still be total
        let _ = attrs.applies();
    }
    for (rank, t) in [(1u64, i64::MIN), (3, 0), (u64::MAX, i64::MAX)] {
        let _ = attrs.verdict(
            obkv_proxy::hbase::cells::Convention::NegatedMs,
            rank,
            t,
            i64::MAX,
        );
        let _ = attrs.verdict(obkv_proxy::hbase::cells::Convention::Ms, rank, t, i64::MIN);
    }
    if let Ok(Some(w)) = obkv_proxy::hbase::ttl::DutyWindow::parse(&text) {
        assert!(w.start <= w.end && w.end < 86_400);
    }
});
