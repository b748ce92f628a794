//! The pages of analysis and FLOP reports: totals, the layer table with each layer's share of
//! the FLOPs, and the operator breakdown (which benchmark pages show too).

use super::{Page, Row, Section, Table, card, fact};

use crate::format::{
    display_number, display_path, float_count_text, format_metric, mode_word, page_metric_cell,
    serde_name, shape_text,
};
use crate::schema::analysis::AnalysisReport;
use crate::schema::flops::{FlopReport, OperatorFlops};

pub(super) fn operator_flops_section(title: &str, flops: &OperatorFlops) -> Vec<Section> {
    let mut rows = Vec::new();
    for op in &flops.counted {
        rows.push(Row {
            indent: 0,
            cells: vec![
                op.operator.clone(),
                "counted".to_owned(),
                float_count_text(op.calls),
                display_number(op.flops, "FLOPs"),
            ],
            bar: None,
        });
    }
    for op in &flops.excluded {
        rows.push(Row {
            indent: 0,
            cells: vec![
                op.operator.clone(),
                format!("excluded ({})", serde_name(&op.class)),
                float_count_text(op.calls),
                "-".to_owned(),
            ],
            bar: None,
        });
    }
    for op in &flops.uncounted {
        rows.push(Row {
            indent: 0,
            cells: vec![
                op.operator.clone(),
                "uncounted".to_owned(),
                float_count_text(op.calls),
                "-".to_owned(),
            ],
            bar: None,
        });
    }
    let mut sections = vec![Section {
        title: title.to_owned(),
        cards: vec![card("Operator FLOPs", &flops.total)],
        table: Some(Table {
            columns: vec!["Operator", "Accounting", "Calls", "FLOPs"],
            numeric: vec![false, false, true, true],
            rows,
        }),
        ..Section::default()
    }];
    if !flops.modules.is_empty() {
        sections.push(Section {
            title: "Operator FLOPs by module".to_owned(),
            table: Some(Table {
                columns: vec!["Module", "Status", "FLOPs"],
                numeric: vec![false, false, true],
                rows: flops
                    .modules
                    .iter()
                    .map(|m| Row {
                        indent: 0,
                        cells: vec![
                            display_path(&m.path).to_owned(),
                            m.flops.status.as_str().to_owned(),
                            format_metric(&m.flops),
                        ],
                        bar: None,
                    })
                    .collect(),
            }),
            ..Section::default()
        });
    }
    sections
}

pub(super) fn analysis_page(page: &mut Page, report: &AnalysisReport) {
    let t = &report.totals;
    page.sections.push(Section {
        title: "Totals".to_owned(),
        facts: vec![
            fact("Mode", mode_word(report.mode)),
            fact("Parameters", format_metric(&t.parameters)),
            fact(
                "Trainable parameters",
                format_metric(&t.trainable_parameters),
            ),
            fact("Frozen parameters", format_metric(&t.frozen_parameters)),
            fact("Buffers", format_metric(&t.buffer_elements)),
            fact("Shared tensors", float_count_text(t.shared_tensors)),
            fact(
                "Inputs",
                report
                    .inputs
                    .args
                    .iter()
                    .map(shape_text)
                    .chain(
                        report
                            .inputs
                            .kwargs
                            .iter()
                            .map(|(name, meta)| format!("{name}={}", shape_text(meta))),
                    )
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        ],
        cards: vec![
            card("Parameter storage (not peak memory)", &t.parameter_bytes),
            card("Buffer storage (not peak memory)", &t.buffer_bytes),
            card("Module FLOPs", &t.module_flops),
            card("Module MACs", &t.macs),
            card("Module DMAs", &t.dmas),
        ],
        ..Section::default()
    });
    let root_flops = t
        .module_flops
        .value
        .or(t.module_flops.known_value)
        .filter(|v| *v > 0.0);
    let rows = report
        .layers
        .iter()
        .map(|layer| {
            let share = root_flops.and_then(|root| {
                let flops = &layer.metrics.module_flops;
                flops
                    .value
                    .or(flops.known_value)
                    .map(|v| (v / root * 100.0).clamp(0.0, 100.0))
            });
            Row {
                indent: layer.depth,
                cells: vec![
                    display_path(&layer.path).to_owned(),
                    layer.type_name.clone(),
                    shape_text(&layer.output),
                    float_count_text(layer.parameters.trainable + layer.parameters.frozen),
                    page_metric_cell(&layer.metrics.module_flops),
                ],
                bar: share.map(|s| format!("{s:.1}")),
            }
        })
        .collect();
    page.sections.push(Section {
        title: "Layers".to_owned(),
        note: Some("Share: each layer's module FLOPs against the root's.".to_owned()),
        table: Some(Table {
            columns: vec![
                "Layer",
                "Type",
                "Output shape",
                "Parameters",
                "FLOPs",
                "Share",
            ],
            numeric: vec![false, false, false, true, true, false],
            rows,
        }),
        ..Section::default()
    });
    page.sections.extend(operator_flops_section(
        "Operator FLOPs",
        &report.operator_flops,
    ));
}

pub(super) fn flops_page(page: &mut Page, report: &FlopReport) {
    if let Some(callable) = &report.callable {
        page.sections.push(Section {
            title: "Callable".to_owned(),
            facts: vec![fact("Callable", callable.clone())],
            ..Section::default()
        });
    }
    page.sections.extend(operator_flops_section(
        "Operator FLOPs",
        &report.operator_flops,
    ));
}
