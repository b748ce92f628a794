//! The pages of analysis and FLOP reports: totals, the layer table with each layer's share of
//! the FLOPs, and the operator breakdown (which benchmark pages show too).

use super::{Page, Row, Section, Table, card, fact, metric_fact, optional_number};

use crate::format::{
    count_text, display_path, float_count_text, mode_word, page_metric_cell, readable_metric,
    serde_name, shape_text,
};
use crate::schema::analysis::{AnalysisReport, LayerParameters};
use crate::schema::flops::{FlopReport, OperatorFlops};

pub(super) fn operator_flops_section(title: &str, flops: &OperatorFlops) -> Vec<Section> {
    let mut rows = Vec::new();
    for op in &flops.counted {
        let (flops, exact) = optional_number(Some(op.flops), "FLOPs");
        rows.push(Row {
            indent: 0,
            cells: vec![
                op.operator.clone(),
                "counted".to_owned(),
                float_count_text(op.calls),
                flops,
            ],
            titles: vec![None, None, None, exact],
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
            titles: Vec::new(),
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
            titles: Vec::new(),
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
                    .map(|m| {
                        let (flops, exact) = readable_metric(&m.flops);
                        Row {
                            indent: 0,
                            cells: vec![
                                display_path(&m.path).to_owned(),
                                m.flops.status.as_str().to_owned(),
                                flops,
                            ],
                            titles: vec![None, None, exact],
                            bar: None,
                        }
                    })
                    .collect(),
            }),
            ..Section::default()
        });
    }
    sections
}

/// What the layer table's note says of parameters in parentheses.
const PARAMETER_TOTAL_NOTE: &str = " Parameters in parentheses: all parameters under the module, \
     submodules included (each storage element once); hover for its own count.";

/// A layer's Parameters cell and its hover title: the total under a module with children, in
/// parentheses, with the split and the module's own count in the title; else its own count
/// (reports written before totals were recorded have only that).
fn parameter_cell(parameters: &LayerParameters) -> (String, Option<String>) {
    let own = parameters.trainable.saturating_add(parameters.frozen);
    let Some(total) = &parameters.total else {
        return (float_count_text(own), None);
    };
    let elements = total.trainable.saturating_add(total.frozen);
    let title = format!(
        "{} parameters under this module ({} trainable, {} frozen; {} B); its own: {} ({} B)",
        count_text(elements),
        count_text(total.trainable),
        count_text(total.frozen),
        count_text(total.bytes),
        count_text(own),
        count_text(parameters.bytes),
    );
    (format!("({})", float_count_text(elements)), Some(title))
}

pub(super) fn analysis_page(page: &mut Page, report: &AnalysisReport) {
    let t = &report.totals;
    page.sections.push(Section {
        title: "Totals".to_owned(),
        facts: vec![
            fact("Mode", mode_word(report.mode)),
            metric_fact("Parameters", &t.parameters),
            metric_fact("Trainable parameters", &t.trainable_parameters),
            metric_fact("Frozen parameters", &t.frozen_parameters),
            metric_fact("Buffers", &t.buffer_elements),
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
        cards: [
            Some(card(
                "Parameter storage (not peak memory)",
                &t.parameter_bytes,
            )),
            Some(card("Buffer storage (not peak memory)", &t.buffer_bytes)),
            t.input_bytes
                .as_ref()
                .map(|bytes| card("Input size", bytes)),
            t.tensor_memory_peak
                .as_ref()
                .map(|peak| card("Tensor memory peak (measured)", peak)),
            Some(card("Module FLOPs", &t.module_flops)),
            Some(card("Module MACs", &t.macs)),
            Some(card("Module DMAs", &t.dmas)),
        ]
        .into_iter()
        .flatten()
        .collect(),
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
            let (flops, exact) = page_metric_cell(&layer.metrics.module_flops);
            let (parameters, parameters_title) = parameter_cell(&layer.parameters);
            Row {
                indent: layer.depth,
                cells: vec![
                    display_path(&layer.path).to_owned(),
                    layer.type_name.clone(),
                    shape_text(&layer.output),
                    parameters,
                    flops,
                ],
                titles: vec![None, None, None, parameters_title, exact],
                bar: share.map(|s| format!("{s:.1}")),
            }
        })
        .collect();
    let mut note = "Share: each layer's module FLOPs against the root's.".to_owned();
    if report
        .layers
        .iter()
        .any(|layer| layer.parameters.total.is_some())
    {
        note.push_str(PARAMETER_TOTAL_NOTE);
    }
    page.sections.push(Section {
        title: "Layers".to_owned(),
        note: Some(note),
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
