//! A dialect from a fuzz input's flags byte (a module of the SQL targets, not a target): the
//! top two bits the backend family (MariaDB, OceanBase, MySQL, MySQL or OceanBase), the low
//! four NO_BACKSLASH_ESCAPES, ANSI_QUOTES, a multibyte character set and plain comments.

use obkv_proxy::sql::scan::{Dialect, Flavor};

pub fn from_flags(flags: u8) -> Dialect {
    let (flavor, version) = match flags >> 6 {
        0 => (Flavor::MariaDb, 101119),
        1 => (Flavor::OceanBase, 50725),
        2 => (Flavor::MySql, 80030),
        _ => (Flavor::MySqlOrOceanBase, 50725),
    };
    Dialect {
        flavor,
        version,
        no_backslash_escapes: flags & 1 != 0,
        ansi_quotes: flags & 2 != 0,
        multibyte_backslash: flags & 4 != 0,
        plain_comments: flags & 8 != 0,
    }
}
