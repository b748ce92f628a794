//! `compare_reports` on the analysis fixtures: totals, layers by identity, diagnostics, refusals.
//! Every diff made here must pass validation.

use std::fs;
use std::path::{Path, PathBuf};

use torchscan_core::diff::{Side, ordered_totals};
use torchscan_core::schema::analysis::{AnalysisMode, AnalysisReport};
use torchscan_core::schema::common::{DiagnosticCode, MetricStatus, Severity};
use torchscan_core::schema::diff::{ReportDiffReport, TotalDelta};
use torchscan_core::{
    CompareError, CompareFailure, Report, ReportKind, compare_report_texts, compare_reports,
    compare_reports_json, read_report,
};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports")
        .join(name)
}

fn fixture_text(name: &str) -> String {
    fs::read_to_string(fixture_path(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn analysis(name: &str) -> AnalysisReport {
    match read_report(&fixture_text(name)) {
        Ok(Report::Analysis(report)) => *report,
        other => panic!("{name} is not a valid analysis: {other:?}"),
    }
}

const ANALYSES: [&str; 4] = [
    "analysis_small_cnn.json",
    "analysis_small_cnn_widened.json",
    "analysis_structure_mode.json",
    "analysis_partial_operator_flops_tied_weights.json",
];

/// Compares, asserts the diff is valid, and returns it.
fn valid_diff(before: &AnalysisReport, after: &AnalysisReport) -> ReportDiffReport {
    let diff = compare_reports(before, after).expect("comparable");
    let report = Report::ReportDiff(Box::new(diff.clone()));
    let problems = torchscan_core::validate::check_report(&report);
    assert!(problems.is_empty(), "the diff is invalid: {problems:#?}");
    diff
}

fn total<'a>(diff: &'a ReportDiffReport, metric: &str) -> &'a TotalDelta {
    diff.totals
        .get(metric)
        .unwrap_or_else(|| panic!("no total `{metric}`"))
}

const TOTALS: [(&str, &str); 11] = [
    ("parameters", "count"),
    ("trainable_parameters", "count"),
    ("frozen_parameters", "count"),
    ("parameter_bytes", "B"),
    ("buffer_elements", "count"),
    ("buffer_bytes", "B"),
    ("shared_tensors", "count"),
    ("module_flops", "FLOPs"),
    ("operator_flops", "FLOPs"),
    ("macs", "MACs"),
    ("dmas", "DMAs"),
];

#[test]
fn a_report_compared_with_itself_has_no_change() {
    for name in ANALYSES {
        let report = analysis(name);
        let diff = valid_diff(&report, &report);
        let metrics: Vec<(&str, &str)> = ordered_totals(&diff.totals)
            .into_iter()
            .map(|(name, t)| (name, t.unit.as_str()))
            .collect();
        assert_eq!(metrics, TOTALS, "{name}");
        assert_eq!(diff.totals.len(), TOTALS.len(), "{name}");
        for (metric, total) in &diff.totals {
            if total.status == MetricStatus::Complete {
                assert_eq!(total.delta, Some(0.0), "{name} {metric}");
                assert_eq!(total.before, total.after, "{name} {metric}");
            } else {
                assert_eq!(total.delta, None, "{name} {metric}");
                assert!(total.reason.is_some(), "{name} {metric}");
            }
        }
        assert!(diff.layers.added.is_empty(), "{name}");
        assert!(diff.layers.removed.is_empty(), "{name}");
        assert!(diff.layers.changed.is_empty(), "{name}");
        assert!(
            diff.diagnostics.is_empty(),
            "{name}: {:?}",
            diff.diagnostics
        );
        assert_eq!(diff.before.model_type, report.context.model_type);
        assert_eq!(diff.after.context, report.context);
        assert_eq!(diff.context.torchscan_version, torchscan_core::VERSION);
        assert_eq!(diff.context.device, None);
    }
}

#[test]
fn a_widened_model_changes_totals_and_layers() {
    let before = analysis("analysis_small_cnn.json");
    let after = analysis("analysis_small_cnn_widened.json");
    let diff = valid_diff(&before, &after);
    let expected = [
        ("parameters", 314.0, 618.0),
        ("trainable_parameters", 314.0, 618.0),
        ("frozen_parameters", 0.0, 0.0),
        ("parameter_bytes", 1256.0, 2472.0),
        ("buffer_elements", 0.0, 0.0),
        ("buffer_bytes", 0.0, 0.0),
        ("shared_tensors", 0.0, 0.0),
        ("module_flops", 403_360.0, 806_720.0),
        ("operator_flops", 388_960.0, 777_920.0),
        ("macs", 201_680.0, 403_360.0),
        ("dmas", 223_540.0, 447_060.0),
    ];
    for (metric, b, a) in expected {
        let total = total(&diff, metric);
        assert_eq!(total.status, MetricStatus::Complete, "{metric}");
        assert_eq!(
            (total.before.value, total.after.value, total.delta),
            (Some(b), Some(a), Some(a - b)),
            "{metric}"
        );
        assert_eq!(total.reason, None, "{metric}");
    }

    let added: Vec<_> = diff
        .layers
        .added
        .iter()
        .map(|l| (l.path.as_str(), l.call_index, l.type_name.as_str()))
        .collect();
    assert_eq!(added, [("5", 0, "Identity")]);
    assert!(diff.layers.removed.is_empty());
    let changed: Vec<_> = diff
        .layers
        .changed
        .iter()
        .map(|l| l.path.as_str())
        .collect();
    assert_eq!(changed, ["0", "1", "2", "3", "4"], "after's layer order");

    let conv = &diff.layers.changed[0];
    assert_eq!(conv.type_name, "Conv2d");
    let changes: Vec<_> = conv
        .changes
        .iter()
        .map(|c| (c.field.as_str(), c.before.as_str(), c.after.as_str()))
        .collect();
    assert_eq!(
        changes,
        [
            (
                "output",
                "tensor [1, 8, 30, 30] float32",
                "tensor [1, 16, 30, 30] float32"
            ),
            ("parameters.trainable", "224", "448"),
            ("parameters.bytes", "896", "1,792"),
            ("metrics.module_flops", "388,800 FLOPs", "777,600 FLOPs"),
            ("metrics.macs", "194,400 MACs", "388,800 MACs"),
            ("metrics.dmas", "201,824 DMAs", "403,648 DMAs"),
        ]
    );
    let flops = &conv.metrics["module_flops"];
    assert_eq!(
        (
            flops.status,
            flops.delta,
            flops.before.value,
            flops.after.value
        ),
        (
            MetricStatus::Complete,
            Some(388_800.0),
            Some(388_800.0),
            Some(777_600.0)
        )
    );
    let names: Vec<_> = conv.metrics.keys().map(String::as_str).collect();
    assert_eq!(names, ["dmas", "macs", "module_flops"]);
    assert!(
        diff.layers.changed[3].metrics.is_empty(),
        "Flatten's shapes only"
    );
    let added = diff.layers.added[0]
        .metrics
        .as_ref()
        .expect("added layer metrics");
    assert_eq!(added.module_flops.value, Some(0.0));
    let relu = &diff.layers.changed[1];
    let fields: Vec<_> = relu.changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        ["input", "output", "metrics.module_flops", "metrics.dmas"]
    );

    assert_eq!(diff.diagnostics.len(), 1, "{:?}", diff.diagnostics);
    let structure = &diff.diagnostics[0];
    assert_eq!(structure.code, DiagnosticCode::StructureChanged);
    assert_eq!(structure.severity, Severity::Info);
    assert_eq!(
        structure.message,
        "1 layer added, 0 layers removed, 5 layers changed (layers are matched by module path and call index)"
    );
}

#[test]
fn the_reverse_comparison_removes_the_layer_and_negates_the_deltas() {
    let small = analysis("analysis_small_cnn.json");
    let widened = analysis("analysis_small_cnn_widened.json");
    let forward = valid_diff(&small, &widened);
    let reverse = valid_diff(&widened, &small);
    assert!(reverse.layers.added.is_empty());
    let removed: Vec<_> = reverse
        .layers
        .removed
        .iter()
        .map(|l| (l.path.as_str(), l.type_name.as_str()))
        .collect();
    assert_eq!(removed, [("5", "Identity")]);
    for ((metric, f), (_, r)) in forward.totals.iter().zip(&reverse.totals) {
        assert_eq!(f.delta.map(|d| -d), r.delta, "{metric}");
    }
    assert_eq!(
        reverse.layers.changed[0].changes[1].before, "448",
        "before is the widened side"
    );
}

#[test]
fn a_partial_side_gives_no_delta_and_the_weaker_status() {
    let before = analysis("analysis_small_cnn.json");
    let after = analysis("analysis_partial_operator_flops_tied_weights.json");
    let diff = valid_diff(&before, &after);
    let module_flops = total(&diff, "module_flops");
    assert_eq!(module_flops.status, MetricStatus::Partial);
    assert_eq!(module_flops.before, before.totals.module_flops);
    assert_eq!(module_flops.before.value, Some(403_360.0));
    assert_eq!(module_flops.after, after.totals.module_flops);
    assert_eq!(module_flops.after.status, MetricStatus::Partial);
    assert_eq!(module_flops.after.value, None);
    assert_eq!(module_flops.delta, None);
    assert_eq!(
        module_flops.reason.as_deref(),
        Some("after is partial: FusedGELU has no estimate formula")
    );
    let operator_flops = total(&diff, "operator_flops");
    assert_eq!(operator_flops.status, MetricStatus::Partial);
    assert_eq!(
        operator_flops.reason.as_deref(),
        Some("after is partial: mylib::fused_gelu has no FLOP formula")
    );
    let shared = total(&diff, "shared_tensors");
    assert_eq!(
        (shared.before.value, shared.after.value, shared.delta),
        (Some(0.0), Some(1.0), Some(1.0))
    );
    assert_eq!(shared.after.unit, "count");

    // Swapped: the partial side is before.
    let swapped = compare_reports(&after, &before).expect("comparable");
    let module_flops = total(&swapped, "module_flops");
    assert_eq!(
        (module_flops.before.status, module_flops.after.value),
        (MetricStatus::Partial, Some(403_360.0))
    );
    assert!(
        module_flops
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("before is partial: "))
    );

    // Different models: the root type changes, every other layer is added or removed.
    let root = &diff.layers.changed[0];
    assert_eq!(root.path, "");
    assert_eq!(root.changes[0].field, "type");
    assert_eq!(
        (
            root.changes[0].before.as_str(),
            root.changes[0].after.as_str()
        ),
        ("Sequential", "TinyLM")
    );
    assert_eq!(diff.layers.added.len(), 4);
    assert_eq!(diff.layers.removed.len(), 5);
    let partial_layer = diff
        .layers
        .changed
        .iter()
        .find(|l| l.path == "act")
        .map(|l| l.changes.clone());
    assert_eq!(partial_layer, None, "`act` exists on one side only");
    assert!(
        diff.diagnostics
            .iter()
            .any(|d| d.code == DiagnosticCode::StructureChanged)
    );
}

#[test]
fn an_unavailable_side_is_the_weakest_status() {
    let structure = analysis("analysis_structure_mode.json");
    let diff = valid_diff(&structure, &structure);
    let module_flops = total(&diff, "module_flops");
    assert_eq!(module_flops.status, MetricStatus::Unavailable);
    assert_eq!(
        (
            module_flops.before.status,
            module_flops.after.status,
            module_flops.delta
        ),
        (MetricStatus::Unavailable, MetricStatus::Unavailable, None)
    );
    assert_eq!(
        module_flops.reason.as_deref(),
        Some("before is unavailable: not requested; after is unavailable: not requested")
    );
    assert_eq!(total(&diff, "parameter_bytes").delta, Some(0.0));

    // Partial before, unavailable after: unavailable.
    let partial = analysis("analysis_partial_operator_flops_tied_weights.json");
    let mut unavailable = partial.clone();
    unavailable.totals.macs = torchscan_core::schema::common::MetricResult::unavailable(
        "MACs",
        "sum over every module call of the module's own estimate",
        &partial.totals.macs.method,
        "the estimate failed",
    );
    let diff = valid_diff(&partial, &unavailable);
    let macs = total(&diff, "macs");
    assert_eq!(macs.status, MetricStatus::Unavailable);
    assert_eq!(
        macs.reason.as_deref(),
        Some(
            "before is partial: FusedGELU has no estimate formula; after is unavailable: the estimate failed"
        )
    );
}

#[test]
fn layer_metrics_and_values_are_written_as_text() {
    let before = analysis("analysis_partial_operator_flops_tied_weights.json");
    let mut after = before.clone();
    // `proj` gets a fractional estimate; `head`'s input requires grad.
    let proj = after
        .layers
        .iter_mut()
        .find(|l| l.path == "proj")
        .expect("proj");
    proj.metrics.module_flops.value = Some(1234.5);
    proj.metrics.module_flops.known_value = Some(1234.5);
    let head = after
        .layers
        .iter_mut()
        .find(|l| l.path == "head")
        .expect("head");
    if let torchscan_core::schema::common::ValueMeta::Tensor(tensor) = &mut head.input.args[0] {
        tensor.requires_grad = true;
    }
    let diff = valid_diff(&before, &after);
    let proj = diff
        .layers
        .changed
        .iter()
        .find(|l| l.path == "proj")
        .expect("proj changed");
    assert_eq!(proj.changes[0].field, "metrics.module_flops");
    assert_eq!(proj.changes[0].after, "1,234.500 FLOPs");
    let head = diff
        .layers
        .changed
        .iter()
        .find(|l| l.path == "head")
        .expect("head changed");
    assert_eq!(head.changes[0].field, "input");
    assert!(
        head.changes[0].after.ends_with("on cpu, requires grad"),
        "the detailed text shows what changed: {:?}",
        head.changes[0]
    );
    assert_ne!(head.changes[0].before, head.changes[0].after);

    // The layer without a formula, compared with a formula: unavailable text with its reason.
    let act_before = before.layers.iter().find(|l| l.path == "act").expect("act");
    assert_eq!(
        act_before.metrics.module_flops.status,
        MetricStatus::Unavailable
    );
    let mut with_formula = before.clone();
    let act_after = with_formula
        .layers
        .iter_mut()
        .find(|l| l.path == "act")
        .expect("act");
    act_after.metrics.module_flops =
        torchscan_core::schema::common::MetricResult::complete(10.0, "FLOPs", "s", "m");
    let diff = valid_diff(&before, &with_formula);
    let change = &diff.layers.changed[0].changes[0];
    assert_eq!(change.field, "metrics.module_flops");
    assert_eq!(
        (change.before.as_str(), change.after.as_str()),
        (
            "unavailable (FusedGELU has no estimate formula)",
            "10 FLOPs"
        )
    );
}

#[test]
fn changed_layers_follow_the_report_after_and_removed_layers_the_report_before() {
    let before = analysis("analysis_small_cnn.json");
    let mut after = analysis("analysis_small_cnn_widened.json");
    after.layers.reverse();
    let diff = valid_diff(&before, &after);
    let changed: Vec<_> = diff
        .layers
        .changed
        .iter()
        .map(|l| l.path.as_str())
        .collect();
    assert_eq!(changed, ["4", "3", "2", "1", "0"]);
    let mut before_reversed = analysis("analysis_small_cnn_widened.json");
    before_reversed.layers.reverse();
    let mut after_two = before_reversed.clone();
    after_two.layers.retain(|l| l.path.is_empty());
    let diff = valid_diff(&before_reversed, &after_two);
    let removed: Vec<_> = diff
        .layers
        .removed
        .iter()
        .map(|l| l.path.as_str())
        .collect();
    assert_eq!(removed, ["5", "4", "3", "2", "1", "0"], "before's order");
}

#[test]
fn repeated_identities_in_typed_input_are_listed_once() {
    let before = analysis("analysis_small_cnn.json");
    let mut after = analysis("analysis_small_cnn_widened.json");
    let extra = after.layers[6].clone();
    after.layers.push(extra);
    let diff = valid_diff(&before, &after);
    assert_eq!(diff.layers.added.len(), 1);
}

#[test]
fn a_different_context_is_a_warning() {
    let before = analysis("analysis_small_cnn.json");
    let mut after = before.clone();
    after.context.device = Some("cuda:0".to_owned());
    after.context.torch_version = Some("2.16.0".to_owned());
    after.context.dtypes = vec!["torch.bfloat16".to_owned()];
    after.context.training_before = Some(true);
    after.context.python_version = Some("3.13.0".to_owned());
    let diff = valid_diff(&before, &after);
    assert_eq!(diff.diagnostics.len(), 1);
    let mismatch = &diff.diagnostics[0];
    assert_eq!(mismatch.code, DiagnosticCode::ContextMismatch);
    assert_eq!(mismatch.severity, Severity::Warning);
    assert_eq!(
        mismatch.message,
        "the reports differ in device (cpu before, cuda:0 after), torch_version (2.15.0 before, \
         2.16.0 after), dtypes (float32 before, bfloat16 after), model mode (eval before, train \
         after); differences may come from the setting, not the model"
    );
    assert_eq!(diff.after.context.device.as_deref(), Some("cuda:0"));
}

#[test]
fn different_modes_are_refused() {
    let full = analysis("analysis_small_cnn.json");
    let structure = analysis("analysis_structure_mode.json");
    let error = compare_reports(&full, &structure).expect_err("modes differ");
    assert_eq!(
        error,
        CompareError::ModeMismatch {
            before: AnalysisMode::Full,
            after: AnalysisMode::Structure
        }
    );
    let message = error.to_string();
    assert!(
        message.contains("before is `full`, after is `structure`"),
        "{message}"
    );
    assert!(message.contains("in the same mode"), "{message}");
}

#[test]
fn different_methods_are_refused() {
    let before = analysis("analysis_small_cnn.json");
    let mut after = before.clone();
    after.operator_flops.total.method = "fvcore".to_owned();
    let error = compare_reports(&before, &after).expect_err("operator methods differ");
    assert!(matches!(
        &error,
        CompareError::MethodMismatch { metric: "operator_flops", after, .. } if after == "fvcore"
    ));
    assert!(
        error
            .to_string()
            .starts_with("the `operator_flops` method differs: before `torch dispatch mode")
    );
    let mut after = before.clone();
    after.totals.module_flops.method = "other formulas".to_owned();
    let error = compare_reports(&before, &after).expect_err("module methods differ");
    assert_eq!(
        error,
        CompareError::MethodMismatch {
            metric: "module_flops",
            before: "torchscan module formulas".to_owned(),
            after: "other formulas".to_owned(),
        }
    );
}

#[test]
fn json_entry_point_gives_a_valid_deterministic_diff() {
    let before = fixture_text("analysis_small_cnn.json");
    let after = fixture_text("analysis_small_cnn_widened.json");
    let text = compare_reports_json(&before, &after).expect("comparable");
    assert!(text.ends_with("}\n"));
    assert_eq!(
        text,
        compare_reports_json(&before, &after).expect("comparable")
    );
    match read_report(&text) {
        Ok(report) => assert_eq!(report.kind(), ReportKind::ReportDiff),
        Err(problems) => panic!("invalid diff: {problems:#?}"),
    }
    let typed = compare_report_texts(&before, &after).expect("comparable");
    assert_eq!(typed.layers.added.len(), 1);
}

#[test]
fn different_schema_versions_are_refused_before_parsing() {
    let before = fixture_text("analysis_small_cnn.json");
    let mut value: serde_json::Value = serde_json::from_str(&before).expect("JSON");
    value["schema_version"] = serde_json::Value::from(2);
    let after = value.to_string();
    let failure = compare_report_texts(&before, &after).expect_err("versions differ");
    assert_eq!(
        failure,
        CompareFailure::Refused(CompareError::SchemaVersionMismatch {
            before: 1,
            after: 2
        })
    );
    let message = failure.to_string();
    assert!(
        message.contains("before is schema_version 1, after is schema_version 2"),
        "{message}"
    );
    // The same unreadable version on both sides is invalid input, not a refusal.
    let failure = compare_report_texts(&after, &after).expect_err("version 2 is unreadable");
    assert!(
        matches!(failure, CompareFailure::Invalid { .. }),
        "{failure}"
    );
}

#[test]
fn other_kinds_are_refused() {
    let analysis = fixture_text("analysis_small_cnn.json");
    let benchmark = fixture_text("benchmark_readme_cpu.json");
    let failure = compare_report_texts(&analysis, &benchmark).expect_err("not an analysis");
    assert_eq!(
        failure,
        CompareFailure::Refused(CompareError::NotAnalysis {
            side: Side::After,
            kind: ReportKind::Benchmark
        })
    );
    assert!(
        failure
            .to_string()
            .contains("the report after is a `benchmark` report")
    );
    let diff_text = fixture_text("report_diff_widened_cnn.json");
    let failure = compare_report_texts(&diff_text, &analysis).expect_err("not an analysis");
    assert!(matches!(
        failure,
        CompareFailure::Refused(CompareError::NotAnalysis {
            side: Side::Before,
            kind: ReportKind::ReportDiff
        })
    ));
}

#[test]
fn invalid_input_lists_the_problems_of_each_side() {
    let valid = fixture_text("analysis_small_cnn.json");
    let failure = compare_report_texts("[]", &valid).expect_err("invalid before");
    let problems = failure.problems();
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "before:$");
    assert_eq!(
        problems[0].message,
        "a report is a JSON object, got an array"
    );

    let broken = valid.replacen("\"shared_tensors\": 0", "\"shared_tensors\": -1", 1);
    let failure = compare_report_texts(&valid, &broken).expect_err("invalid after");
    let CompareFailure::Invalid { before, after } = &failure else {
        panic!("expected invalid input, got {failure}");
    };
    assert!(before.is_empty());
    assert_eq!(after[0].path, "$.totals.shared_tensors");
    assert!(
        failure
            .problems()
            .iter()
            .all(|p| p.path.starts_with("after:$"))
    );
    assert!(
        failure
            .to_string()
            .starts_with("invalid input (1 problem):\n  after:$.totals.shared_tensors: ")
    );

    let failure = compare_report_texts("not json", "{\"schema_version\": 1}").expect_err("both");
    let paths: Vec<_> = failure.problems().into_iter().map(|p| p.path).collect();
    assert_eq!(paths, ["before:$", "after:$.kind"]);
    assert!(failure.problems().iter().all(|p| !p.message.is_empty()));
    assert_eq!(
        CompareFailure::Refused(CompareError::SchemaVersionMismatch {
            before: 1,
            after: 2
        })
        .problems(),
        []
    );
}

#[test]
fn non_finite_numbers_are_invalid_input_not_a_panic() {
    let valid = fixture_text("analysis_small_cnn.json");
    let broken = valid.replacen("\"value\": 1256,", "\"value\": NaN,", 1);
    let failure = compare_report_texts(&broken, &valid).expect_err("NaN");
    let problems = failure.problems();
    assert_eq!(problems[0].path, "before:$.totals.parameter_bytes.value");
}
