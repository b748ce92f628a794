//! The page of a benchmark comparison: the verdict banner, the settings, both contexts side by
//! side and every metric's delta.

use super::{Banner, Page, Row, Section, Table, contexts_section, fact, optional_number};

use crate::format::{float_count_text, group_thousands, grown_decimals, serde_name, verdict_words};
use crate::schema::common::Context;
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus, Verdict};

pub(super) fn comparison_page(page: &mut Page, report: &BenchmarkComparisonReport) {
    let check_failed = report.check.status == CheckStatus::Failed;
    let mut text = format!("Verdict: {}", verdict_words(report.verdict));
    if check_failed {
        text.push_str(" (the output check failed: deltas withheld)");
    }
    page.banner = Some(Banner {
        tone: match report.verdict {
            Verdict::Faster => "good",
            Verdict::Slower => "bad",
            Verdict::Withheld => "bad",
            Verdict::NoDetectableChange | Verdict::Inconclusive => "neutral",
        },
        text,
    });
    let side = |label: &str, workload: &Option<String>, context: &Context| {
        fact(
            label,
            format!(
                "{} on {}",
                workload.clone().unwrap_or_else(|| "a workload".to_owned()),
                context
                    .device
                    .clone()
                    .unwrap_or_else(|| "unknown device".to_owned())
            ),
        )
    };
    let s = &report.settings;
    let c = &report.check;
    page.sections.push(Section {
        title: "Comparison".to_owned(),
        facts: vec![
            side(
                "Baseline",
                &report.baseline.workload,
                &report.baseline.context,
            ),
            side(
                "Candidate",
                &report.candidate.workload,
                &report.candidate.context,
            ),
            fact("Work unit", report.work_unit.clone()),
            fact("Output check", serde_name(&c.status)),
            fact(
                "Check method",
                c.method.clone().unwrap_or_else(|| "-".to_owned()),
            ),
            fact("Failed leaves", float_count_text(c.failed_leaves)),
            fact("Confidence level", group_thousands(s.confidence_level, 3)),
            fact(
                "Bootstrap resamples",
                float_count_text(s.bootstrap_resamples),
            ),
            fact("Seed", s.seed.to_string()),
            fact("Minimum effect", group_thousands(s.min_effect, 3)),
        ],
        ..Section::default()
    });
    page.sections.push(contexts_section(
        ("Baseline", &report.baseline.context),
        ("Candidate", &report.candidate.context),
    ));
    let rows = report
        .deltas
        .iter()
        .map(|d| {
            let withheld = d.status == DeltaStatus::Withheld;
            let shown = |v: Option<f64>| {
                if withheld {
                    ("withheld".to_owned(), None)
                } else {
                    optional_number(v, &d.unit)
                }
            };
            let (baseline, baseline_exact) = shown(d.baseline);
            let (candidate, candidate_exact) = shown(d.candidate);
            let (delta, delta_exact) = shown(d.delta);
            let ratio = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |r| grown_decimals(r, 3));
            Row {
                indent: 0,
                cells: vec![
                    d.metric.clone(),
                    serde_name(&d.status),
                    baseline,
                    candidate,
                    delta,
                    if withheld {
                        "withheld".to_owned()
                    } else {
                        format!(
                            "{} [{}, {}]",
                            ratio(d.ratio),
                            ratio(d.ratio_ci_low),
                            ratio(d.ratio_ci_high)
                        )
                    },
                    d.verdict
                        .map_or_else(|| "-".to_owned(), |v| verdict_words(v).to_owned()),
                    d.reason.clone().unwrap_or_default(),
                    d.method.clone().unwrap_or_default(),
                ],
                titles: vec![None, None, baseline_exact, candidate_exact, delta_exact],
                bar: None,
            }
        })
        .collect();
    page.sections.push(Section {
        title: "Deltas".to_owned(),
        note: check_failed.then(|| "Deltas withheld: the output check failed.".to_owned()),
        table: Some(Table {
            columns: vec![
                "Metric",
                "Status",
                "Baseline",
                "Candidate",
                "Delta",
                "Ratio [CI]",
                "Verdict",
                "Reason",
                "Method",
            ],
            numeric: vec![false, false, true, true, true, true, false, false, false],
            rows,
        }),
        ..Section::default()
    });
}
