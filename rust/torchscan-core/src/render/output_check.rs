//! The page of an output check: the verdict banner, the tolerances, structure differences and
//! every compared leaf.

use super::{Banner, Page, Row, Section, Table, fact};

use crate::format::{float_count_text, shape_text};
use crate::schema::common::ValueMeta;
use crate::schema::output_check::OutputCheckReport;

fn optional_error(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3e}"))
}

pub(super) fn output_check_page(page: &mut Page, report: &OutputCheckReport) {
    page.banner = Some(if report.passed {
        Banner {
            tone: "good",
            text: "Outputs match".to_owned(),
        }
    } else {
        Banner {
            tone: "bad",
            text: "Outputs differ".to_owned(),
        }
    });
    let mut facts = vec![
        fact("Passed", report.passed.to_string()),
        fact("Method", report.method.clone()),
        fact("rtol", format!("{:e}", report.rtol)),
        fact("atol", format!("{:e}", report.atol)),
        fact("equal_nan", report.equal_nan.to_string()),
    ];
    if let Some(check_dtype) = report.check_dtype {
        facts.push(fact("check_dtype", check_dtype.to_string()));
    }
    facts.push(fact(
        "Structure matches",
        report.structure_matches.to_string(),
    ));
    page.sections.push(Section {
        title: "Check".to_owned(),
        facts,
        ..Section::default()
    });
    if !report.structure_differences.is_empty() {
        page.sections.push(Section {
            title: "Structure differences".to_owned(),
            table: Some(Table {
                columns: vec!["Path", "Baseline", "Candidate"],
                numeric: vec![false, false, false],
                rows: report
                    .structure_differences
                    .iter()
                    .map(|d| Row {
                        indent: 0,
                        cells: vec![d.path.clone(), d.baseline.clone(), d.candidate.clone()],
                        titles: Vec::new(),
                        bar: None,
                    })
                    .collect(),
            }),
            ..Section::default()
        });
    }
    let tensor = |t: &crate::schema::common::TensorMeta| {
        format!(
            "{} {} {}",
            shape_text(&ValueMeta::Tensor(t.clone())),
            t.dtype_text(),
            t.device
        )
    };
    page.sections.push(Section {
        title: "Leaves".to_owned(),
        table: Some(Table {
            columns: vec![
                "Path",
                "Result",
                "Baseline",
                "Candidate",
                "Mismatched",
                "Max abs error",
                "Max rel error",
            ],
            numeric: vec![false, false, false, false, true, true, true],
            rows: report
                .leaves
                .iter()
                .map(|leaf| Row {
                    indent: 0,
                    cells: vec![
                        leaf.path.clone(),
                        if leaf.passed { "passed" } else { "failed" }.to_owned(),
                        tensor(&leaf.baseline),
                        tensor(&leaf.candidate),
                        format!(
                            "{} of {}",
                            float_count_text(leaf.mismatched_elements),
                            float_count_text(leaf.elements)
                        ),
                        optional_error(leaf.max_abs_error),
                        optional_error(leaf.max_rel_error),
                    ],
                    titles: Vec::new(),
                    bar: None,
                })
                .collect(),
        }),
        ..Section::default()
    });
}
