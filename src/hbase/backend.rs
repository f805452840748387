//! What the backend can do natively, which decides how HBase DDL is carried out.

/// The backend's kind as configured (`hbase.backend_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Detected from the server version at connect time.
    Auto,
    /// An OceanBase cluster: table groups and KV_ATTRIBUTES are native.
    Oceanbase,
    /// The single-node OceanBase kernel: no table groups, no KV_ATTRIBUTES.
    Seekdb,
    Mariadb,
    Mysql,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// An OceanBase cluster: TABLEGROUP, KV_ATTRIBUTES, large varbinary, generated partition keys.
    OceanBase,
    /// The single-node OceanBase kernel: no table groups (1064) and no KV_ATTRIBUTES.
    SeekDb,
    /// MariaDB or MySQL: varbinary up to 65532, no generated column in the primary key.
    MySqlFamily,
}

/// What the proxy learns about the backend once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendFacts {
    pub flavor: Flavor,
    /// `lower_case_table_names` is not 0: table and schema names compare case-insensitively.
    pub names_ci: bool,
}

impl Flavor {
    pub fn detect(kind: BackendKind, server_version: &[u8]) -> Flavor {
        let v = String::from_utf8_lossy(server_version).to_ascii_lowercase();
        match kind {
            BackendKind::Oceanbase => Flavor::OceanBase,
            BackendKind::Seekdb => Flavor::SeekDb,
            BackendKind::Mariadb | BackendKind::Mysql => Flavor::MySqlFamily,
            BackendKind::Auto if v.contains("seekdb") => Flavor::SeekDb,
            BackendKind::Auto if v.contains("oceanbase") => Flavor::OceanBase,
            BackendKind::Auto => Flavor::MySqlFamily,
        }
    }

    pub fn native_tablegroups(self) -> bool {
        self == Flavor::OceanBase
    }

    pub fn kv_attributes_option(self) -> bool {
        self == Flavor::OceanBase
    }

    /// Largest VARBINARY length the backend accepts.
    pub fn max_varbinary(self) -> u64 {
        match self {
            Flavor::OceanBase | Flavor::SeekDb => 1 << 20,
            Flavor::MySqlFamily => 65532,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_from_version_strings() {
        assert_eq!(
            Flavor::detect(BackendKind::Auto, b"5.7.25-OceanBase seekdb-v1.4.0.0"),
            Flavor::SeekDb
        );
        assert_eq!(
            Flavor::detect(BackendKind::Auto, b"5.7.25-OceanBase-v4.3.5.3"),
            Flavor::OceanBase
        );
        assert_eq!(
            Flavor::detect(BackendKind::Auto, b"5.5.5-10.11.19-MariaDB-0+deb12u1"),
            Flavor::MySqlFamily
        );
        assert_eq!(
            Flavor::detect(BackendKind::Oceanbase, b"5.5.5-10.11.19-MariaDB"),
            Flavor::OceanBase
        );
    }
}
