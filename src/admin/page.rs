//! The advisor's page on the admin listener (`/advisor`): per table, a heatmap of writes and
//! one of reads (a column per partition, a row per epoch, oldest at the top, brighter = more;
//! like TiDB's Key Visualizer) drawn as inline SVG, with the findings beside it. No script, no
//! external asset; every text from a table (names, rowkeys in findings) is HTML-escaped.
//!
//! Layout is fixed so a test can read a screenshot: the first table's writes heatmap starts at
//! the page's top-left corner, each partition `cell_width(n)` pixels wide and each epoch
//! `CELL_HEIGHT` high.

use std::fmt::Write;

use super::advisor::TableReport;

pub const CELL_HEIGHT: usize = 24;

/// Bytes of page past which further tables are only linked (each table's own page draws it):
/// 50 tables of 997 partitions would otherwise make a page of tens of megabytes.
pub const PAGE_BUDGET: usize = 4 << 20;

/// A name percent-encoded for a query string.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A partition's column width in pixels: the heatmap is about 1,000 pixels wide, at least
/// one pixel a partition.
pub fn cell_width(partitions: usize) -> usize {
    (1000 / partitions.max(1)).clamp(1, 40)
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The colour of a share `t` (0..=1) of the table's largest count: dark blue to bright yellow,
/// brighter as it grows (every channel rises with `t`).
pub fn colour(t: f64) -> (u8, u8, u8) {
    let t = t.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    (mix(24.0, 255.0), mix(24.0, 236.0), mix(48.0, 96.0))
}

fn heatmap(out: &mut String, r: &TableReport, writes: bool, titles: bool) {
    let n = r.total.1.len().max(1);
    let w = cell_width(n);
    let rows: Vec<&Vec<u32>> = r
        .epochs
        .iter()
        .map(|(_, reads, ws)| if writes { ws } else { reads })
        .collect();
    let height = rows.len().max(1) * CELL_HEIGHT;
    let max = rows
        .iter()
        .flat_map(|row| row.iter())
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let what = if writes { "writes" } else { "reads" };
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="heat" data-kind="{what}" width="{}" height="{height}" viewBox="0 0 {} {height}" shape-rendering="crispEdges" style="display:block">"#,
        n * w,
        n * w
    );
    let _ = write!(
        out,
        r#"<rect x="0" y="0" width="{}" height="{height}" fill="rgb(24,24,48)"/>"#,
        n * w
    );
    for (y, (row, (start, _, _))) in rows.iter().zip(&r.epochs).enumerate() {
        if titles {
            for (x, &c) in row.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let (red, green, blue) = colour(f64::from(c) / f64::from(max));
                let _ = write!(
                    out,
                    r#"<rect x="{}" y="{}" width="{w}" height="{CELL_HEIGHT}" fill="rgb({red},{green},{blue})"><title>p{x}, {c} {what} in the {}s from {}</title></rect>"#,
                    x * w,
                    y * CELL_HEIGHT,
                    r.epoch_seconds,
                    utc(*start)
                );
            }
            continue;
        }
        // many tables on one page: 32 shades, and a run of equal shades is one rectangle
        let shade = |c: u32| (c > 0).then(|| (u64::from(c) * 31).div_ceil(u64::from(max)));
        let mut x = 0;
        while x < row.len() {
            let s0 = shade(row[x]);
            let mut end = x + 1;
            while end < row.len() && shade(row[end]) == s0 {
                end += 1;
            }
            if let Some(level) = s0 {
                let (red, green, blue) = colour(level as f64 / 31.0);
                let _ = write!(
                    out,
                    r#"<rect x="{}" y="{}" width="{}" height="{CELL_HEIGHT}" fill="rgb({red},{green},{blue})"/>"#,
                    x * w,
                    y * CELL_HEIGHT,
                    (end - x) * w
                );
            }
            x = end;
        }
    }
    out.push_str("</svg>");
}

/// The whole page for these tables.
/// Unix seconds as a UTC time (`2026-11-26T22:39:10Z`).
pub fn utc(unix_seconds: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_seconds);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The whole page for these tables, with `note` (what the reader may see) above them.
pub fn advisor_page(reports: &[TableReport], note: &str) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>obkv-proxy rowkey advisor</title>\
         <style>body{margin:0;background:#101018;color:#ddd;font:13px sans-serif}\
         section{display:flex;gap:16px;align-items:flex-start;margin:0 0 24px 0}\
         .maps p{margin:2px 0 10px 0;color:#999}\
         table{border-collapse:collapse}td,th{border:1px solid #333;padding:3px 6px;text-align:left;vertical-align:top}\
         h2{font-size:14px;margin:0 0 6px 0}</style></head><body>",
    );
    if reports.is_empty() {
        out.push_str("<p>No HBase table traffic seen yet.</p>");
    }
    let titles = reports.len() == 1;
    for r in reports {
        if out.len() > PAGE_BUDGET {
            // past the page's budget: the rest are links to their own pages
            let _ = write!(
                out,
                "<p><a href=\"/advisor?table={}.{}\">{}.{}</a></p>",
                escape(&percent(&r.database)),
                escape(&percent(&r.table)),
                escape(&r.database),
                escape(&r.table)
            );
            continue;
        }
        out.push_str("<section><div class=\"maps\">");
        heatmap(&mut out, r, true, titles);
        let _ = write!(
            out,
            "<p>writes per partition (columns p0…p{}), {}s per row, oldest first{}</p>",
            r.total.1.len().saturating_sub(1),
            r.epoch_seconds,
            match (r.epochs.first(), r.epochs.last()) {
                (Some((a, _, _)), Some((b, _, _))) => format!(
                    " (rows from {} to {} UTC)",
                    utc(*a),
                    utc(b.saturating_add(r.epoch_seconds))
                ),
                _ => String::new(),
            }
        );
        heatmap(&mut out, r, false, titles);
        out.push_str("<p>reads per partition</p></div><div>");
        let _ = write!(
            out,
            "<h2>{}.{}</h2><p>{} · {} writes, {} gets, {} scans seen</p>",
            escape(&r.database),
            escape(&r.table),
            escape(&r.partitioning),
            r.writes,
            r.gets,
            r.scans
        );
        if r.findings.is_empty() {
            out.push_str("<p>Nothing the guides warn of.</p>");
        } else {
            out.push_str(
                "<table><tr><th>rule</th><th>evidence</th><th>advice</th><th>DDL</th></tr>",
            );
            for f in &r.findings {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(f.rule),
                    escape(&f.evidence),
                    escape(&f.advice),
                    escape(f.ddl.as_deref().unwrap_or(""))
                );
            }
            out.push_str("</table>");
        }
        out.push_str("</div></section>");
    }
    // (below the tables: the first heatmap stays at the page's top-left corner)
    if !note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::advisor::detect::Finding;

    fn report() -> TableReport {
        let mut writes = vec![1u32; 7];
        writes[3] = 50;
        TableReport {
            database: "db".into(),
            table: "g$<f>".into(),
            partitioning: "KEY(K) PARTITIONS 7".into(),
            writes: 56,
            gets: 0,
            scans: 0,
            findings: vec![Finding {
                rule: "hot_key",
                evidence: "rowkey <script>alert(1)</script>".into(),
                advice: "a & b".into(),
                ddl: None,
            }],
            recent: (vec![0; 7], writes.iter().map(|&c| u64::from(c)).collect()),
            total: (vec![0; 7], writes.iter().map(|&c| u64::from(c)).collect()),
            epochs: vec![(100, vec![0; 7], writes)],
            epoch_seconds: 10,
        }
    }

    #[test]
    fn the_page_escapes_what_it_shows_and_draws_every_count() {
        let page = advisor_page(&[report()], "");
        assert!(!page.contains("<script>"));
        assert!(page.contains("&lt;script&gt;"));
        assert!(page.contains("g$&lt;f&gt;"));
        assert!(page.contains("a &amp; b"));
        // the hot partition's cell is the brightest colour
        assert!(page.contains("<title>p3, 50 writes"));
        let (r, g, b) = colour(1.0);
        assert!(page.contains(&format!("fill=\"rgb({r},{g},{b})\"><title>p3")));
        // several tables: shaded runs, the hot cell still the brightest
        let two = advisor_page(&[report(), report()], "");
        assert!(two.contains(&format!(
            "<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{CELL_HEIGHT}\" fill=\"rgb({r},{g},{b})\"/>",
            3 * cell_width(7),
            cell_width(7)
        )));
        assert!(two.len() < 2 * page.len());
        // many tables: the page stays within its budget, the rest linked
        let mut big = report();
        let n = 997;
        big.total = (vec![0; n], vec![0; n]);
        big.epochs = (0..8u64)
            .map(|e| {
                (
                    e,
                    (0..n as u32).collect(),
                    (0..n as u32).map(|i| i * 7 % 31).collect(),
                )
            })
            .collect();
        let many: Vec<TableReport> = (0..50)
            .map(|i| TableReport {
                table: format!("t{i}$f"),
                ..big.clone()
            })
            .collect();
        let page = advisor_page(&many, "");
        assert!(page.len() < PAGE_BUDGET + (2 << 20), "{}", page.len());
        assert!(page.contains("/advisor?table=db.t49%24f"));
    }

    #[test]
    fn colours_grow_brighter() {
        let mut last = 0u32;
        for i in 0..=10 {
            let (r, g, b) = colour(f64::from(i) / 10.0);
            let sum = u32::from(r) + u32::from(g) + u32::from(b);
            assert!(sum > last || i == 0);
            last = sum;
        }
    }
}
