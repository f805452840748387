//! Numeric constants of the MySQL client/server protocol (capability flags, status flags,
//! command bytes) that the proxy reads or edits.

pub mod cap {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const NO_SCHEMA: u32 = 1 << 4;
    pub const COMPRESS: u32 = 1 << 5;
    pub const ODBC: u32 = 1 << 6;
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const IGNORE_SPACE: u32 = 1 << 8;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const IGNORE_SIGPIPE: u32 = 1 << 12;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const RESERVED: u32 = 1 << 14;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
    pub const SESSION_TRACK: u32 = 1 << 23;
    pub const DEPRECATE_EOF: u32 = 1 << 24;

    /// What the proxy asks for when it logs in for itself (start-up catalog work): an ordinary
    /// client's set. Not PROXY_SUPPORTED, which includes flags that change parsing (NO_SCHEMA
    /// rejects `db.table` names, IGNORE_SPACE, ODBC).
    pub const OWN_LOGIN: u32 = LONG_PASSWORD
        | LONG_FLAG
        | PROTOCOL_41
        | TRANSACTIONS
        | SECURE_CONNECTION
        | MULTI_RESULTS
        | PLUGIN_AUTH
        | PLUGIN_AUTH_LENENC_CLIENT_DATA
        | DEPRECATE_EOF;

    /// Capabilities the proxy can relay faithfully. Everything else is masked out of the greeting
    /// (and out of the client's answer): optional result-set metadata and query attributes change
    /// framing the proxy must read, zstd compression is not offered by the backends it serves,
    /// and unknown vendor bits (OceanBase's, MariaDB's extended ones) are not advertised because
    /// the proxy does not know what they change. COMPRESS (zlib) is decoded and encoded on each
    /// leg (`protocol::compress`).
    pub const PROXY_SUPPORTED: u32 = LONG_PASSWORD
        | FOUND_ROWS
        | LONG_FLAG
        | CONNECT_WITH_DB
        | NO_SCHEMA
        | COMPRESS
        | ODBC
        | LOCAL_FILES
        | IGNORE_SPACE
        | PROTOCOL_41
        | INTERACTIVE
        | IGNORE_SIGPIPE
        | TRANSACTIONS
        | RESERVED
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | CONNECT_ATTRS
        | PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CAN_HANDLE_EXPIRED_PASSWORDS
        | SESSION_TRACK
        | DEPRECATE_EOF;
}

/// MariaDB's extended capabilities: four more bytes in the greeting's reserved area and in the
/// login's filler (bytes 28..32), present when CLIENT_MYSQL (bit 0, LONG_PASSWORD) is clear.
pub mod ext {
    /// Progress reports: ERR packets with code 0xFFFF before the final answer.
    pub const PROGRESS: u32 = 1;
    pub const COM_MULTI: u32 = 1 << 1;
    /// COM_STMT_BULK_EXECUTE (0xFA).
    pub const STMT_BULK_OPERATIONS: u32 = 1 << 2;
    /// Extended type information in column definitions (JSON, inet6, uuid, …).
    pub const EXTENDED_METADATA: u32 = 1 << 3;
    /// A metadata-follows byte after the column count; 0 = column definitions skipped.
    pub const CACHE_METADATA: u32 = 1 << 4;
    pub const BULK_UNIT_RESULTS: u32 = 1 << 6;

    /// What the proxy can relay: it follows progress packets, the metadata-follows byte and
    /// bulk responses; column definitions are relayed unread. COM_MULTI (obsolete) and
    /// BULK_UNIT_RESULTS (framing the proxy has not learnt) are not advertised.
    pub const PROXY_SUPPORTED: u32 =
        PROGRESS | STMT_BULK_OPERATIONS | EXTENDED_METADATA | CACHE_METADATA;
}

/// Capabilities in force on a connection: the classic 32 bits and MariaDB's extended ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Caps {
    pub base: u32,
    pub ext: u32,
}

impl Caps {
    pub fn new(base: u32, ext: u32) -> Caps {
        Caps { base, ext }
    }

    /// Classic capabilities only (servers other than MariaDB).
    pub fn classic(base: u32) -> Caps {
        Caps { base, ext: 0 }
    }

    pub fn has(self, c: u32) -> bool {
        self.base & c != 0
    }

    /// A MariaDB extended capability; only meaningful when CLIENT_MYSQL (bit 0) is clear.
    pub fn has_ext(self, c: u32) -> bool {
        self.base & cap::LONG_PASSWORD == 0 && self.ext & c != 0
    }
}

pub mod status {
    pub const IN_TRANS: u16 = 1;
    pub const AUTOCOMMIT: u16 = 2;
    pub const MORE_RESULTS_EXISTS: u16 = 8;
    pub const NO_BACKSLASH_ESCAPES: u16 = 0x200;
    pub const CURSOR_EXISTS: u16 = 64;
    pub const LAST_ROW_SENT: u16 = 128;
    /// The OK packet reports session-state changes (under CLIENT_SESSION_TRACK).
    pub const SESSION_STATE_CHANGED: u16 = 0x4000;
}

/// Command bytes (first byte of a command packet).
pub mod com {
    pub const SLEEP: u8 = 0x00;
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const CREATE_DB: u8 = 0x05;
    pub const DROP_DB: u8 = 0x06;
    pub const REFRESH: u8 = 0x07;
    pub const STATISTICS: u8 = 0x09;
    pub const PROCESS_INFO: u8 = 0x0a;
    pub const PROCESS_KILL: u8 = 0x0c;
    pub const DEBUG: u8 = 0x0d;
    pub const PING: u8 = 0x0e;
    pub const CHANGE_USER: u8 = 0x11;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1a;
    pub const SET_OPTION: u8 = 0x1b;
    pub const STMT_FETCH: u8 = 0x1c;
    pub const RESET_CONNECTION: u8 = 0x1f;
    /// MariaDB: executes a prepared statement for many rows of parameters.
    pub const STMT_BULK_EXECUTE: u8 = 0xfa;
}

/// Largest packet accepted before login completes (the login itself with user, auth data,
/// database and connect attributes, and every auth round). Checked before anything is allocated.
pub const MAX_LOGIN_PACKET: usize = 64 * 1024;

/// Largest payload of one protocol frame; a longer payload continues in the next frame.
pub const MAX_FRAME: usize = 0xFF_FFFF;

/// utf8mb4_general_ci, used for text the proxy itself produces.
pub const CHARSET_UTF8MB4_GENERAL_CI: u8 = 45;

/// Field types used by result sets the proxy builds itself.
pub const MYSQL_TYPE_LONGLONG: u8 = 0x08;
pub const MYSQL_TYPE_VAR_STRING: u8 = 0xfd;

/// Every MySQL / MariaDB error code the proxy sends or reads, by its server's name (server
/// errors `ER_*`, client errors `CR_*` without the prefix). The one place these numbers are
/// written: a check in the test command (tests/source_rules.rs) fails on an error code written
/// as a number anywhere else.
pub mod er {
    /// Too many connections.
    pub const CON_COUNT_ERROR: u16 = 1040;
    /// Out of memory / resources (a LOAD DATA spool over its limit).
    pub const OUT_OF_RESOURCES: u16 = 1041;
    /// `KILL` of a connection id nothing goes by (ER_NO_SUCH_THREAD).
    pub const NO_SUCH_THREAD: u16 = 1094;
    /// `KILL` of another user's thread (ER_KILL_DENIED_ERROR).
    pub const KILL_DENIED: u16 = 1095;
    /// A session's own `KILL CONNECTION` (MariaDB's ER_CONNECTION_KILLED).
    pub const CONNECTION_KILLED: u16 = 1927;
    pub const HANDSHAKE_ERROR: u16 = 1043;
    pub const ACCESS_DENIED_ERROR: u16 = 1045;
    pub const NO_DB_ERROR: u16 = 1046;
    pub const UNKNOWN_COM_ERROR: u16 = 1047;
    pub const BAD_NULL_ERROR: u16 = 1048;
    pub const BAD_DB_ERROR: u16 = 1049;
    pub const TABLE_EXISTS_ERROR: u16 = 1050;
    pub const BAD_TABLE_ERROR: u16 = 1051;
    pub const BAD_FIELD_ERROR: u16 = 1054;
    /// Syntax error: also what the proxy answers for a text it cannot read as the backend does.
    pub const PARSE_ERROR: u16 = 1064;
    pub const TOO_BIG_FIELDLENGTH: u16 = 1074;
    pub const WRONG_TABLE_NAME: u16 = 1103;
    pub const UNKNOWN_ERROR: u16 = 1105;
    /// No such table (and, for HBase table groups, no such table group).
    pub const NO_SUCH_TABLE: u16 = 1146;
    pub const TABLEACCESS_DENIED_ERROR: u16 = 1142;
    pub const COLUMNACCESS_DENIED_ERROR: u16 = 1143;
    pub const VIEW_INVALID: u16 = 1356;
    pub const UNKNOWN_PARTITION: u16 = 1735;
    /// OceanBase's TTL command errors (its own codes, sent as they are to MySQL clients):
    /// OB_TTL_NOT_ENABLE, OB_TTL_CMD_NOT_ALLOWED, OB_TTL_NO_TASK_RUNNING.
    pub const TTL_NOT_ENABLE: u16 = 10501;
    pub const TTL_CMD_NOT_ALLOWED: u16 = 10504;
    pub const TTL_NO_TASK_RUNNING: u16 = 10505;
    pub const NET_PACKET_TOO_LARGE: u16 = 1153;
    pub const NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    pub const NET_READ_INTERRUPTED: u16 = 1159;
    pub const WRONG_COLUMN_NAME: u16 = 1166;
    pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
    pub const WRONG_ARGUMENTS: u16 = 1210;
    /// "This version doesn't yet support …": what drivers and ORMs treat as a feature error.
    pub const NOT_SUPPORTED_YET: u16 = 1235;
    pub const TRUNCATED_WRONG_VALUE: u16 = 1292;
    /// "This command is not supported in the prepared statement protocol yet".
    pub const UNSUPPORTED_PS: u16 = 1295;
    pub const NO_DEFAULT_FOR_FIELD: u16 = 1364;
    pub const DATA_TOO_LONG: u16 = 1406;
    pub const MAX_PREPARED_STMT_COUNT_REACHED: u16 = 1461;
    /// "Prepared statement needs to be re-prepared" (its tables changed under it).
    pub const NEED_REPREPARE: u16 = 1615;
    pub const MALFORMED_PACKET: u16 = 1835;
    /// Client: can't connect to the server.
    pub const CR_CONN_HOST_ERROR: u16 = 2003;
    /// Client: lost connection to the server during a query.
    pub const CR_SERVER_LOST: u16 = 2013;
    pub const CR_SSL_CONNECTION_ERROR: u16 = 2026;
    pub const CR_MALFORMED_PACKET: u16 = 2027;
    /// A value given for a generated column.
    pub const NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN: u16 = 3105;
}
