//! Invariants of the model views: operator FLOPs, layers and analysis totals.

use super::{
    Checker, approx_equal, check_metric, check_value_meta, check_value_metas, has_diagnostic,
};
use crate::schema::analysis::{
    AnalysisMode, AnalysisReport, Layer, LayerParameters, ParameterTotal, ReceptiveField,
};
use crate::schema::common::{Diagnostic, DiagnosticCode, MetricResult, MetricStatus, ValueMeta};
use crate::schema::flops::{FlopReport, OperatorFlops, class_name};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn check_operator_flops(
    c: &mut Checker,
    key: &str,
    flops: &OperatorFlops,
    diagnostics: &[Diagnostic],
    model_type: Option<&str>,
) {
    c.at(key, |c| {
        check_metric(c, "total", &flops.total, Some("FLOPs"));
        let mut seen = BTreeSet::new();
        let mut note_operator = |c: &mut Checker, name: &str, calls: u64| {
            c.non_empty("operator", name);
            c.at_least_one("calls", calls);
            if !seen.insert(name.to_owned()) {
                c.problem_at(
                    "operator",
                    format!("`{name}` is listed more than once; each operator is in exactly one class, once"),
                );
            }
        };
        let mut counted_sum = 0.0;
        c.at("counted", |c| {
            for (index, op) in flops.counted.iter().enumerate() {
                c.at_index(index, |c| {
                    note_operator(c, &op.operator, op.calls);
                    c.non_negative("flops", op.flops);
                    counted_sum += op.flops;
                });
            }
        });
        c.at("excluded", |c| {
            for (index, op) in flops.excluded.iter().enumerate() {
                c.at_index(index, |c| note_operator(c, &op.operator, op.calls));
            }
        });
        c.at("uncounted", |c| {
            for (index, op) in flops.uncounted.iter().enumerate() {
                c.at_index(index, |c| {
                    note_operator(c, &op.operator, op.calls);
                    let named = diagnostics.iter().any(|d| {
                        d.code == DiagnosticCode::UncountedOperator
                            && d.operator.as_deref() == Some(op.operator.as_str())
                    });
                    if !named {
                        c.problem(format!(
                            "no `uncounted_operator` diagnostic names `{}`",
                            op.operator
                        ));
                    }
                });
            }
        });
        for (key, names) in [
            ("counted", flops.counted.iter().map(|op| op.operator.as_str()).collect::<Vec<_>>()),
            ("excluded", flops.excluded.iter().map(|op| op.operator.as_str()).collect()),
            ("uncounted", flops.uncounted.iter().map(|op| op.operator.as_str()).collect()),
        ] {
            if let Some(index) = names.windows(2).position(|pair| pair[0] > pair[1]) {
                c.at(key, |c| {
                    c.at_index(index + 1, |c| {
                        c.problem_at("operator", format!("operators are sorted by name; `{}` comes after `{}`", names[index + 1], names[index]))
                    })
                });
            }
        }
        let elsewhere = flops.other_threads.is_some_and(|other| other.calls > 0);
        match flops.total.status {
            MetricStatus::Complete if !flops.uncounted.is_empty() => c.at("total", |c| {
                c.problem_at(
                    "status",
                    "cannot be complete while an operator is uncounted; use partial",
                )
            }),
            MetricStatus::Complete if elsewhere => c.at("total", |c| {
                c.problem_at(
                    "status",
                    "cannot be complete while operators ran on other threads; use partial",
                )
            }),
            MetricStatus::Partial if flops.uncounted.is_empty() && !elsewhere => c.at("total", |c| {
                c.problem_at(
                    "status",
                    "partial operator FLOPs list the uncounted operators, or the calls on other threads, that make them partial",
                )
            }),
            _ => {}
        }
        if let Some(known) = flops.total.known_value
            && !approx_equal(known, counted_sum)
        {
            c.at("total", |c| {
                c.problem_at(
                    "known_value",
                    format!("must equal the sum of counted operators' flops, {counted_sum}"),
                )
            });
        }
        c.at("modules", |c| {
            let mut paths = BTreeSet::new();
            for (index, module) in flops.modules.iter().enumerate() {
                c.at_index(index, |c| {
                    if !paths.insert(module.path.as_str()) {
                        c.problem_at(
                            "path",
                            format!("module `{}` is listed more than once", module.path),
                        );
                    }
                    check_metric(c, "flops", &module.flops, Some("FLOPs"));
                });
            }
        });
        let (by_operator, by_module, ignored) = flops.legacy_views(model_type.map(class_name));
        // Reports written before `model_type` was qualified named the root by the whole
        // `model_type` (a `__qualname__` such as `Outer.Inner`); they stay valid.
        let by_module_as_written_before = || flops.legacy_views(model_type).1;
        if flops.by_operator != by_operator {
            c.problem_at(
                "by_operator",
                "must give each operator of counted, by its torchscan 0.2 name (`aten.addmm`), with its flops, and no other",
            );
        }
        if flops.by_module != by_module && flops.by_module != by_module_as_written_before() {
            c.problem_at(
                "by_module",
                "must give the known_value of each modules entry that has one, by its torchscan 0.2 name (root class, then path)",
            );
        }
        if flops.ignored_operators != ignored {
            c.problem_at(
                "ignored_operators",
                "must give each operator of excluded, by its torchscan 0.2 name, with its calls and its class's reason",
            );
        }
    });
}

fn check_receptive_field(c: &mut Checker, field: &ReceptiveField) {
    c.at("receptive_field", |c| {
        let lists = [
            ("size", &field.size),
            ("stride", &field.stride),
            ("padding", &field.padding),
        ];
        match field.status {
            MetricStatus::Complete => {
                let mut lengths = BTreeSet::new();
                for (key, list) in lists {
                    match list {
                        Some(values) => {
                            lengths.insert(values.len());
                        }
                        None => c.problem_at(
                            key,
                            "a complete receptive field sets size, stride and padding",
                        ),
                    }
                }
                if lengths.len() > 1 {
                    c.problem(
                        "size, stride and padding must have one entry per spatial dimension each",
                    );
                }
                if field.reason.is_some() {
                    c.problem_at("reason", "a complete receptive field has a null reason");
                }
            }
            MetricStatus::Partial => {
                if field.size.is_none() {
                    c.problem_at(
                        "size",
                        "a partial receptive field gives lower bounds in size",
                    );
                }
                if field.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    c.problem_at("reason", "a partial receptive field says why in reason");
                }
            }
            MetricStatus::Unavailable => {
                for (key, list) in lists {
                    if list.is_some() {
                        c.problem_at(
                            key,
                            "an unavailable receptive field has null size, stride and padding",
                        );
                    }
                }
                if field.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    c.problem_at(
                        "reason",
                        "an unavailable receptive field says why in reason",
                    );
                }
            }
        }
        for (key, list) in lists {
            if let Some(values) = list {
                c.at(key, |c| {
                    for (index, value) in values.iter().enumerate() {
                        if *value < 0.0 {
                            c.at_index(index, |c| {
                                c.problem(format!("must be non-negative, found {value}"))
                            });
                        }
                    }
                });
            }
        }
    });
}

/// Positional and keyword arguments' metadata; every keyword is a non-empty name.
fn check_arguments(c: &mut Checker, args: &[ValueMeta], kwargs: &BTreeMap<String, ValueMeta>) {
    check_value_metas(c, "args", args);
    c.at("kwargs", |c| {
        for (name, meta) in kwargs {
            if name.is_empty() {
                c.problem("a keyword argument has an empty name");
            }
            c.at(name, |c| check_value_meta(c, meta));
        }
    });
}

fn check_layer(c: &mut Checker, layer: &Layer, mode: AnalysisMode) {
    c.non_empty("type", &layer.type_name);
    match layer.path.rsplit('.').next() {
        Some(last) if !layer.path.is_empty() && layer.name != last => c.problem_at(
            "name",
            format!(
                "must be `{last}`, the last component of path `{}`",
                layer.path
            ),
        ),
        _ => c.non_empty("name", &layer.name),
    }
    let expected_depth = if layer.path.is_empty() {
        0
    } else {
        layer.path.split('.').count() as u64
    };
    if layer.path.split('.').any(str::is_empty) && !layer.path.is_empty() {
        c.problem_at("path", format!("`{}` has an empty component", layer.path));
    } else if layer.depth != expected_depth {
        c.problem_at(
            "depth",
            format!(
                "must be {expected_depth} for path `{}` (0 for the root, else the number of path components)",
                layer.path
            ),
        );
    }
    if layer.parameters.bytes == 0 && layer.parameters.trainable + layer.parameters.frozen > 0 {
        c.at("parameters", |c| {
            c.problem_at("bytes", "parameters with elements take bytes")
        });
    }
    if let Some(total) = &layer.parameters.total {
        c.at("parameters", |c| {
            check_parameter_total(c, &layer.parameters, total)
        });
    }
    if layer.buffers.bytes == 0 && layer.buffers.elements > 0 {
        c.at("buffers", |c| {
            c.problem_at("bytes", "buffers with elements take bytes")
        });
    }
    c.at("input", |c| {
        check_arguments(c, &layer.input.args, &layer.input.kwargs)
    });
    c.at("output", |c| check_value_meta(c, &layer.output));
    c.at("metrics", |c| {
        check_metric(c, "calls", &layer.metrics.calls, Some("count"));
        if layer.metrics.calls.status != MetricStatus::Complete
            || layer.metrics.calls.value != Some(1.0)
        {
            c.at("calls", |c| {
                c.problem("a layer is one call: complete, value 1");
            });
        }
        let field = &layer.receptive_field;
        for (key, metric, per_dimension) in [
            ("receptive_field", &layer.metrics.receptive_field, &field.size),
            ("effective_stride", &layer.metrics.effective_stride, &field.stride),
            ("effective_padding", &layer.metrics.effective_padding, &field.padding),
        ] {
            check_metric(c, key, metric, Some("count"));
            let Some(value) = metric.value else { continue };
            let agrees = field.status == MetricStatus::Complete
                && per_dimension
                    .as_ref()
                    .is_some_and(|values| !values.is_empty() && values.iter().all(|v| *v == value));
            if !agrees {
                c.at(key, |c| {
                    c.problem_at(
                        "value",
                        "a single number is given only when the complete receptive_field has it for every spatial dimension",
                    )
                });
            }
        }
        for (key, metric, unit) in [
            ("module_flops", &layer.metrics.module_flops, "FLOPs"),
            ("macs", &layer.metrics.macs, "MACs"),
            ("dmas", &layer.metrics.dmas, "DMAs"),
        ] {
            check_metric(c, key, metric, Some(unit));
            if mode == AnalysisMode::Structure && metric.status != MetricStatus::Unavailable {
                c.at(key, |c| {
                    c.problem_at(
                        "status",
                        "structure mode computes no estimates: unavailable (not requested)",
                    )
                });
            }
        }
    });
    check_receptive_field(c, &layer.receptive_field);
}

/// A layer's total under its module against its own count: each part at least the own one (the
/// own tensors are under the module, and counted there no later than among all layers), and
/// bytes for elements.
fn check_parameter_total(c: &mut Checker, own: &LayerParameters, total: &ParameterTotal) {
    for (key, own_count, total_count) in [
        ("trainable", own.trainable, total.trainable),
        ("frozen", own.frozen, total.frozen),
        ("bytes", own.bytes, total.bytes),
    ] {
        if total_count < own_count {
            c.at("total", |c| {
                c.problem_at(
                    key,
                    format!(
                        "the total under the module ({total_count}) is below the layer's own {key} ({own_count})"
                    ),
                )
            });
        }
    }
    if total.bytes == 0 && total.trainable.saturating_add(total.frozen) > 0 {
        c.at("total", |c| {
            c.problem_at("bytes", "parameters with elements take bytes")
        });
    }
}

/// The totals under modules against the model's: the root's is the model's, any other at most
/// the model's, and every call of one module has the same.
fn check_parameter_totals(c: &mut Checker, report: &AnalysisReport) {
    let totals = &report.totals;
    let model = (
        totals.trainable_parameters.value,
        totals.frozen_parameters.value,
        totals.parameter_bytes.value,
    );
    let mut first_of_path: BTreeMap<&str, Option<&ParameterTotal>> = BTreeMap::new();
    for (index, layer) in report.layers.iter().enumerate() {
        let total = layer.parameters.total.as_ref();
        let first = *first_of_path.entry(layer.path.as_str()).or_insert(total);
        c.at_index(index, |c| {
            c.at("parameters", |c| {
                if first != total {
                    c.problem_at(
                        "total",
                        format!(
                            "every call of module `{}` has the same total under it",
                            layer.path
                        ),
                    );
                }
                let Some(total) = total else { return };
                let (Some(trainable), Some(frozen), Some(bytes)) = model else {
                    return;
                };
                let elements = total.trainable.saturating_add(total.frozen) as f64;
                if layer.path.is_empty()
                    && (total.trainable as f64 != trainable
                        || total.frozen as f64 != frozen
                        || total.bytes as f64 != bytes)
                {
                    c.problem_at(
                        "total",
                        format!(
                            "the root's total must equal the model's totals (trainable \
                             {trainable}, frozen {frozen}, {bytes} bytes)"
                        ),
                    );
                } else if elements > trainable + frozen || total.bytes as f64 > bytes {
                    c.problem_at(
                        "total",
                        "a total under a module is at most the model's totals (parameters and \
                         parameter_bytes)",
                    );
                }
            })
        });
    }
}

/// An element count among the totals: complete, unit `count`, a whole number.
fn check_count_metric(c: &mut Checker, key: &str, metric: &MetricResult) {
    check_metric(c, key, metric, Some("count"));
    c.at(key, |c| {
        if metric.status != MetricStatus::Complete {
            c.problem_at("status", "an element count is always complete");
        }
        if let Some(value) = metric.value
            && value.fract() != 0.0
        {
            c.problem_at(
                "value",
                format!("an element count is a whole number, found {value}"),
            );
        }
    });
}

pub(super) fn check_analysis(c: &mut Checker, report: &AnalysisReport) {
    c.at("inputs", |c| {
        check_arguments(c, &report.inputs.args, &report.inputs.kwargs)
    });
    let totals = &report.totals;
    c.at("totals", |c| {
        for (key, metric) in [
            ("parameters", &totals.parameters),
            ("trainable_parameters", &totals.trainable_parameters),
            ("frozen_parameters", &totals.frozen_parameters),
            ("buffer_elements", &totals.buffer_elements),
        ] {
            check_count_metric(c, key, metric);
        }
        if let (Some(parameters), Some(trainable), Some(frozen)) = (
            totals.parameters.value,
            totals.trainable_parameters.value,
            totals.frozen_parameters.value,
        ) && trainable + frozen != parameters
        {
            c.at("parameters", |c| {
                c.problem_at(
                    "value",
                    format!(
                        "must equal trainable_parameters + frozen_parameters ({trainable} + {frozen})"
                    ),
                )
            });
        }
        check_metric(c, "parameter_bytes", &totals.parameter_bytes, Some("B"));
        check_metric(c, "buffer_bytes", &totals.buffer_bytes, Some("B"));
        if let Some(input_bytes) = &totals.input_bytes {
            check_metric(c, "input_bytes", input_bytes, Some("B"));
        }
        if let Some(peak) = &totals.tensor_memory_peak {
            check_metric(c, "tensor_memory_peak", peak, Some("B"));
        }
        for (key, metric, unit) in [
            ("module_flops", &totals.module_flops, "FLOPs"),
            ("operator_flops", &totals.operator_flops, "FLOPs"),
            ("macs", &totals.macs, "MACs"),
            ("dmas", &totals.dmas, "DMAs"),
        ] {
            check_metric(c, key, metric, Some(unit));
            if report.mode == AnalysisMode::Structure && metric.status != MetricStatus::Unavailable
            {
                c.at(key, |c| {
                    c.problem_at(
                        "status",
                        "structure mode computes no estimates: unavailable (not requested)",
                    )
                });
            }
        }
        if totals.operator_flops != report.operator_flops.total {
            c.problem_at(
                "operator_flops",
                "must equal operator_flops.total (the same metric, repeated among the totals)",
            );
        }
        if totals.shared_tensors > 0
            && !has_diagnostic(&report.diagnostics, DiagnosticCode::SharedTensors)
        {
            c.problem_at(
                "shared_tensors",
                "shared tensors are reported with a `shared_tensors` diagnostic",
            );
        }
    });
    c.at("layers", |c| {
        let mut identities = BTreeSet::new();
        for (index, layer) in report.layers.iter().enumerate() {
            c.at_index(index, |c| {
                if !identities.insert((layer.path.as_str(), layer.call_index)) {
                    c.problem(format!(
                        "layer `{}` call {} appears more than once; identity is path plus call index",
                        layer.path, layer.call_index
                    ));
                }
                check_layer(c, layer, report.mode);
            });
        }
        check_parameter_totals(c, report);
    });
    check_operator_flops(
        c,
        "operator_flops",
        &report.operator_flops,
        &report.diagnostics,
        report.context.model_type.as_deref(),
    );
    if report.mode == AnalysisMode::Structure
        && report.operator_flops.total.status != MetricStatus::Unavailable
    {
        c.at("operator_flops", |c| {
            c.at("total", |c| {
                c.problem_at(
                    "status",
                    "structure mode computes no estimates: unavailable (not requested)",
                )
            })
        });
    }
}

pub(super) fn check_flops(c: &mut Checker, report: &FlopReport) {
    check_metric(c, "total", &report.total, Some("FLOPs"));
    if report.total != report.operator_flops.total {
        c.problem_at(
            "total",
            "must equal operator_flops.total (the same metric, repeated at the top)",
        );
    }
    check_operator_flops(
        c,
        "operator_flops",
        &report.operator_flops,
        &report.diagnostics,
        report.context.model_type.as_deref(),
    );
    let view = &report.operator_flops;
    for (key, same) in [
        ("by_operator", report.by_operator == view.by_operator),
        ("by_module", report.by_module == view.by_module),
        (
            "ignored_operators",
            report.ignored_operators == view.ignored_operators,
        ),
    ] {
        if !same {
            c.problem_at(
                key,
                format!("must equal operator_flops.{key} (the same view, repeated at the top)"),
            );
        }
    }
}
