//! `obkv-proxy partition`: the model's partition function for users checking a rowkey design
//! before loading data.

use crate::hbase::partition::ModelPartitioning;
use std::fmt::Write;
use std::path::Path;

use super::partition::Spread;
use crate::sql::ddl::{parse, Statement};

fn decode_hex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    super::marker::from_hex(digits.as_bytes()).ok_or_else(|| format!("{s:?} is not hex"))
}

pub fn partition(
    ddl: &str,
    hex: bool,
    keys_file: Option<&Path>,
    keys: &[String],
) -> Result<String, String> {
    let table = match parse(ddl.as_bytes()).map_err(|e| format!("cannot read the DDL: {e}"))? {
        Some(Statement::CreateTable(t)) => t,
        _ => return Err("--ddl must be a CREATE TABLE statement".into()),
    };
    let p = table
        .model_partitioning()
        .ok_or("the table's PARTITION BY is not an HBase partitioning (KEY(K), KEY(prefix column) or RANGE COLUMNS(K))")?;
    let decode = |k: &str| {
        if hex {
            decode_hex(k)
        } else {
            Ok(k.as_bytes().to_vec())
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}", table.name, p.describe());
    if let Some(path) = keys_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let keys: Vec<Vec<u8>> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(decode)
            .collect::<Result<_, _>>()?;
        let s = Spread::of(&p, keys.iter().map(Vec::as_slice));
        let _ = writeln!(out, "keys\t{}", s.keys);
        let _ = writeln!(out, "partitions\t{}", s.counts.len());
        let _ = writeln!(out, "empty_partitions\t{}", s.empty_partitions());
        let _ = writeln!(out, "min_per_partition\t{}", s.min());
        let _ = writeln!(out, "max_per_partition\t{}", s.max());
        let _ = writeln!(out, "mean_per_partition\t{:.1}", s.mean());
        let _ = writeln!(out, "skew_max_over_mean\t{:.2}", s.skew());
        let _ = writeln!(
            out,
            "coefficient_of_variation\t{:.3}",
            s.coefficient_of_variation()
        );
        if s.rejected > 0 {
            let _ = writeln!(out, "keys_no_partition_takes\t{}", s.rejected);
        }
        let verdict = if s.skew() > 2.0 {
            "SKEWED: the largest partition holds more than twice the mean; check the rowkey prefix (hash it, or avoid low-cardinality or monotonic prefixes)"
        } else {
            "ok: keys spread evenly"
        };
        let _ = writeln!(out, "verdict\t{verdict}");
        return Ok(out);
    }
    if keys.is_empty() {
        return Err("give rowkeys as arguments, or --keys-file FILE".into());
    }
    for k in keys {
        let bytes = decode(k)?;
        match p.partition_of(&bytes) {
            Some(i) => {
                let _ = writeln!(out, "{k}\tp{i}");
            }
            None => {
                let _ = writeln!(out, "{k}\tno partition (above the last RANGE bound)");
            }
        }
    }
    Ok(out)
}
