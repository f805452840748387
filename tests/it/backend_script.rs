//! What `scripts/backend.sh` gives each MariaDB instance it starts (for the tests, the
//! benchmarks and the run command): a temporary-file folder of its own. MariaDB deletes every
//! `#sql*` file in its tmpdir when it starts, taking them for its own leftovers; two instances
//! sharing /tmp meant that starting one deleted the other's live internal temporary tables,
//! and the other crashed (signal 11 in `ha_maria::drop_table`) as it ended the query that used
//! one. The project's tests start private instances beside the shared one, and did crash it.

use std::path::PathBuf;

use crate::common::backends::Backend;
use crate::common::raw::RawConn;
use crate::common::{shared, Kind};

fn tmpdir(b: &Backend) -> PathBuf {
    let mut c = RawConn::connect(&b.addr, "root", "", None).expect("login");
    PathBuf::from(c.scalar("SELECT @@tmpdir"))
}

#[test]
fn starting_a_mariadb_instance_leaves_the_others_temporary_files_alone() {
    // the shared instance when the harness started it, else one of this test's own
    let shared = shared(Kind::MariaDb);
    let own;
    let first = if shared.dir.as_os_str().is_empty() {
        own = Backend::start_private(Kind::MariaDb, "tmpdir-a");
        &own
    } else {
        shared
    };
    let first_tmp = tmpdir(first);
    assert!(
        first_tmp.starts_with(&first.dir),
        "the tmpdir {} is not in the instance's folder {}",
        first_tmp.display(),
        first.dir.display()
    );
    // a file as MariaDB names its temporary tables, where the first instance keeps them
    let probe = first_tmp.join(format!("#sql-probe-{}.MAI", std::process::id()));
    std::fs::write(&probe, b"probe").expect("write the probe");
    let second = Backend::start_private(Kind::MariaDb, "tmpdir-b");
    let second_tmp = tmpdir(&second);
    let kept = probe.exists();
    let _ = std::fs::remove_file(&probe);
    assert!(
        kept,
        "starting a second instance deleted the first one's {}",
        probe.display()
    );
    assert_ne!(first_tmp, second_tmp, "two instances share a tmpdir");
    assert!(second_tmp.starts_with(&second.dir));
}
