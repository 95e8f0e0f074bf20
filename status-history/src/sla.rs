//! SLA reports: per dependency, group and objective over a window, what was observed, the
//! good share, bad time, incidents opened and time excluded; as JSON or as RFC 4180 CSV.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::uptime::iso;

/// One line of an SLA report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlaRow {
    /// `dependency`, `group` or `objective`.
    pub kind: &'static str,
    /// The dependency's id, the group's or the objective's name.
    pub name: String,
    /// For an objective, its target as written (`dependency:primary-db`).
    pub target: Option<String>,
    /// For an objective, the share that must be good (0.999).
    pub objective: Option<f64>,
    /// The window read, widened to its buckets.
    #[serde(serialize_with = "ser_iso")]
    pub from: DateTime<Utc>,
    /// Its end (excluded).
    #[serde(serialize_with = "ser_iso")]
    pub to: DateTime<Utc>,
    /// Time observed: not muted, not excluded.
    pub observed_ms: u64,
    /// Of that, bad: at MAJOR or worse (an objective's own level for an objective).
    pub bad_ms: u64,
    /// The good share of the observed time; `None` with none observed.
    pub good_share: Option<f64>,
    /// The share of observed time not in OUTAGE; `None` with none observed.
    pub uptime: Option<f64>,
    /// Incidents opened in the window that covered it.
    pub incidents_opened: u64,
    /// Time excluded as planned maintenance after the fact.
    pub excluded_ms: u64,
    /// For an objective: whether the good share met it.
    pub met: Option<bool>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn ser_iso<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&iso(*t))
}

/// The CSV header, in the order of [`to_csv`]'s columns.
pub const CSV_HEADER: [&str; 13] = [
    "kind",
    "name",
    "target",
    "objective",
    "from",
    "to",
    "observedMs",
    "badMs",
    "goodShare",
    "uptime",
    "incidentsOpened",
    "excludedMs",
    "met",
];

/// `rows` as RFC 4180 CSV: one header row, CRLF line ends, a field quoted when it holds a
/// comma, a quote or a line break (its quotes doubled); an absent value is an empty field.
/// A text field that a spreadsheet would read as a formula (`=`, `+`, `-`, `@` first) is
/// given a leading `'`.
#[must_use]
pub fn to_csv(rows: &[SlaRow]) -> String {
    let mut out = String::new();
    line(&mut out, CSV_HEADER.iter().map(|h| (*h).to_owned()));
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in rows {
        line(
            &mut out,
            [
                r.kind.to_owned(),
                text(&r.name),
                r.target.as_deref().map(text).unwrap_or_default(),
                opt(r.objective),
                iso(r.from),
                iso(r.to),
                r.observed_ms.to_string(),
                r.bad_ms.to_string(),
                opt(r.good_share),
                opt(r.uptime),
                r.incidents_opened.to_string(),
                r.excluded_ms.to_string(),
                r.met.map(|m| m.to_string()).unwrap_or_default(),
            ]
            .into_iter(),
        );
    }
    out
}

/// A text field a spreadsheet will not run.
fn text(value: &str) -> String {
    if value.starts_with(['=', '+', '-', '@']) {
        format!("'{value}")
    } else {
        value.to_owned()
    }
}

fn line(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if field.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&field.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&field);
        }
    }
    out.push_str("\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn csv_quotes_what_it_must_and_ends_lines_with_crlf() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let row = SlaRow {
            kind: "dependency",
            name: "a,\"b\"".into(),
            target: Some("=cmd".into()),
            objective: None,
            from: t,
            to: t,
            observed_ms: 10,
            bad_ms: 1,
            good_share: Some(0.9),
            uptime: None,
            incidents_opened: 2,
            excluded_ms: 0,
            met: Some(true),
        };
        let csv = to_csv(&[row]);
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines.len(), 3, "{csv:?}");
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(
            lines[1],
            "dependency,\"a,\"\"b\"\"\",'=cmd,,2026-12-01T00:00:00Z,2026-12-01T00:00:00Z,10,1,0.9,,2,0,true"
        );
        assert_eq!(lines[2], "");
    }
}
