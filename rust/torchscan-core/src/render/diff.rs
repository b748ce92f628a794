//! The page of a report diff: the two analyses, both contexts side by side, the totals' deltas
//! and the layers added, removed and changed.

use std::fmt::Write as _;

use super::{Page, Row, Section, Table, contexts_section, fact, optional_number};

use crate::format::{display_path, or_unknown};
use crate::schema::diff::{ReportDiffReport, ordered_totals};

fn layer_rows<'a, I>(layers: I) -> Vec<Row>
where
    I: Iterator<Item = (&'a str, u64, &'a str, String)>,
{
    layers
        .map(|(path, call_index, type_name, changes)| Row {
            indent: 0,
            cells: vec![
                display_path(path).to_owned(),
                call_index.to_string(),
                type_name.to_owned(),
                changes,
            ],
            titles: Vec::new(),
            bar: None,
        })
        .collect()
}

pub(super) fn diff_page(page: &mut Page, report: &ReportDiffReport) {
    let model = |m: &Option<String>| or_unknown(m.as_deref()).to_owned();
    page.sections.push(Section {
        title: "Compared analyses".to_owned(),
        facts: vec![
            fact("Before", model(&report.before.model_type)),
            fact("After", model(&report.after.model_type)),
        ],
        ..Section::default()
    });
    page.sections.push(contexts_section(
        ("Before", &report.before.context),
        ("After", &report.after.context),
    ));
    page.sections.push(Section {
        title: "Totals".to_owned(),
        table: Some(Table {
            columns: vec!["Metric", "Status", "Before", "After", "Delta", "Reason"],
            numeric: vec![false, false, true, true, true, false],
            rows: ordered_totals(&report.totals)
                .into_iter()
                .map(|(name, t)| {
                    let (before, before_exact) = optional_number(t.before.value, &t.unit);
                    let (after, after_exact) = optional_number(t.after.value, &t.unit);
                    let (delta, delta_exact) = optional_number(t.delta, &t.unit);
                    Row {
                        indent: 0,
                        cells: vec![
                            name.to_owned(),
                            t.status.as_str().to_owned(),
                            before,
                            after,
                            delta,
                            t.reason.clone().unwrap_or_default(),
                        ],
                        titles: vec![None, None, before_exact, after_exact, delta_exact],
                        bar: None,
                    }
                })
                .collect(),
        }),
        ..Section::default()
    });
    let columns = vec!["Layer", "Call", "Type", "Changes"];
    let numeric = vec![false, true, false, false];
    let sets = [
        (
            "Layers added",
            layer_rows(report.layers.added.iter().map(|l| {
                (
                    l.path.as_str(),
                    l.call_index,
                    l.type_name.as_str(),
                    String::new(),
                )
            })),
        ),
        (
            "Layers removed",
            layer_rows(report.layers.removed.iter().map(|l| {
                (
                    l.path.as_str(),
                    l.call_index,
                    l.type_name.as_str(),
                    String::new(),
                )
            })),
        ),
        (
            "Layers changed",
            layer_rows(report.layers.changed.iter().map(|l| {
                let mut changes = String::new();
                for (i, c) in l.changes.iter().enumerate() {
                    if i > 0 {
                        changes.push_str("; ");
                    }
                    let _ = write!(changes, "{}: {} -> {}", c.field, c.before, c.after);
                }
                (l.path.as_str(), l.call_index, l.type_name.as_str(), changes)
            })),
        ),
    ];
    for (title, rows) in sets {
        page.sections.push(Section {
            title: format!("{title} ({})", rows.len()),
            table: (!rows.is_empty()).then(|| Table {
                columns: columns.clone(),
                numeric: numeric.clone(),
                rows,
            }),
            note: None,
            ..Section::default()
        });
    }
}
