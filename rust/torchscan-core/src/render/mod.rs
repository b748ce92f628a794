//! The HTML page of every report kind: one self-contained file (inline CSS, no script, no
//! external request), light and dark, printable.
//!
//! The page is rendered with minijinja from templates embedded at compile time. Every string of
//! the report reaches the page through HTML autoescape (the templates are named `*.html.j2`),
//! after its control and bidirectional formatting characters are escaped (`\u202e`);
//! numbers are formatted in Rust by [`crate::format`], exactly as the text summary formats them.

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;

use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::format::{
    display_number, display_path, float_count_text, format_metric, group_thousands, mode_word,
    noise_label, or_unknown, page_metric_cell, serde_name, shape_text, threads_text, verdict_words,
};
use crate::problem::Problem;
use crate::read::read_report;
use crate::schema::Report;
use crate::schema::analysis::AnalysisReport;
use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{Context, Diagnostic, MetricResult, MetricStatus, ValueMeta};
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus, Verdict};
use crate::schema::diff::{ReportDiffReport, ordered_totals};
use crate::schema::flops::{FlopReport, OperatorFlops};
use crate::schema::output_check::OutputCheckReport;
use crate::schema::peak_memory::PeakMemoryReport;
use crate::stats;
use crate::summary::{ContextRow, context_rows, display_text};

const PAGE_TEMPLATE: &str = "page.html.j2";
const PAGE_SOURCE: &str = include_str!("templates/page.html.j2");

/// A page that could not be rendered: a template error (a bug of torchscan, never of the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderError {
    /// What went wrong, for people.
    pub message: String,
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot render the HTML page: {}", self.message)
    }
}

impl std::error::Error for RenderError {}

impl From<minijinja::Error> for RenderError {
    fn from(error: minijinja::Error) -> Self {
        RenderError {
            message: error.to_string(),
        }
    }
}

/// Report JSON that gave no page: invalid input, or a rendering error.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderFailure {
    /// The report failed validation; every problem with its JSON path.
    Invalid(Vec<Problem>),
    /// The valid report could not be rendered (a bug).
    Render(RenderError),
}

impl RenderFailure {
    /// The validation problems (empty for a rendering error).
    pub fn problems(&self) -> &[Problem] {
        match self {
            RenderFailure::Invalid(problems) => problems,
            RenderFailure::Render(_) => &[],
        }
    }
}

impl fmt::Display for RenderFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderFailure::Invalid(problems) => {
                write!(f, "invalid report: {} problem(s)", problems.len())
            }
            RenderFailure::Render(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for RenderFailure {}

/// Validates report JSON text and renders its HTML page.
pub fn render_report_json(text: &str) -> Result<String, RenderFailure> {
    let report = read_report(text).map_err(RenderFailure::Invalid)?;
    render_html(&report).map_err(RenderFailure::Render)
}

/// The self-contained HTML page of a report: the same report always gives the same bytes.
pub fn render_html(report: &Report) -> Result<String, RenderError> {
    let page = build_page(report);
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_formatter(display_formatter);
    env.add_template(PAGE_TEMPLATE, PAGE_SOURCE)?;
    let template = env.get_template(PAGE_TEMPLATE)?;
    let mut html = template.render(Value::from(Serde(&page)))?;
    if !html.ends_with('\n') {
        html.push('\n');
    }
    Ok(html)
}

/// Writes every value of the page: strings with control, bidirectional formatting and line
/// separator characters escaped as `\u202e` (see [`display_text`]), then HTML-escaped as
/// minijinja's default formatter does. Every string of the page passes here, so none can reach it
/// raw.
fn display_formatter(
    out: &mut minijinja::Output<'_>,
    state: &mut minijinja::State<'_, '_>,
    value: &Value,
) -> Result<(), minijinja::Error> {
    if let Some(text) = value.as_str()
        && let Cow::Owned(shown) = display_text(text)
    {
        return minijinja::escape_formatter(out, state, &Value::from(shown));
    }
    minijinja::escape_formatter(out, state, value)
}

// ---------------------------------------------------------------------------------------------
// The page model: display strings only, prepared here.

#[derive(Debug, Default, Serialize)]
struct Page {
    kind: String,
    title: String,
    context: Vec<Fact>,
    banner: Option<Banner>,
    sections: Vec<Section>,
    diagnostics: Vec<DiagnosticRow>,
}

#[derive(Debug, Serialize)]
struct Fact {
    label: String,
    value: String,
}

#[derive(Debug, Serialize)]
struct Banner {
    tone: &'static str,
    text: String,
}

#[derive(Debug, Default, Serialize)]
struct Section {
    title: String,
    note: Option<String>,
    facts: Vec<Fact>,
    cards: Vec<Card>,
    chart: Option<Chart>,
    table: Option<Table>,
    sides: Option<SideBySide>,
}

/// Two contexts side by side: one row per setting, the differing rows marked.
#[derive(Debug, Serialize)]
struct SideBySide {
    left: &'static str,
    right: &'static str,
    rows: Vec<SideRow>,
}

#[derive(Debug, Serialize)]
struct SideRow {
    label: String,
    left: String,
    right: String,
    differs: bool,
}

#[derive(Debug, Serialize)]
struct Card {
    label: String,
    status: &'static str,
    value: String,
    reason: Option<String>,
    method: String,
    scope: String,
}

#[derive(Debug, Serialize)]
struct Table {
    columns: Vec<&'static str>,
    numeric: Vec<bool>,
    rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
struct Row {
    /// Indentation of the first cell, in em.
    indent: u64,
    cells: Vec<String>,
    /// A share bar after the last cell, as a CSS width percentage.
    bar: Option<String>,
}

#[derive(Debug, Serialize)]
struct Chart {
    width: u32,
    height: u32,
    /// Left and right ends of the plot area; the axis labels sit left of it.
    plot_left: u32,
    plot_right: u32,
    points: Vec<Point>,
    median_y: String,
    q1_y: String,
    q3_y: String,
    iqr_height: String,
    labels: Vec<AxisLabel>,
    caption: String,
}

#[derive(Debug, Serialize)]
struct Point {
    x: String,
    y: String,
    /// Above the plotted range: drawn hollow at the top edge.
    clipped: bool,
}

#[derive(Debug, Serialize)]
struct AxisLabel {
    y: String,
    text: String,
}

#[derive(Debug, Serialize)]
struct DiagnosticRow {
    severity: &'static str,
    code: String,
    message: String,
    metric: Option<String>,
    path: Option<String>,
    operator: Option<String>,
}

fn fact(label: &str, value: impl Into<String>) -> Fact {
    Fact {
        label: label.to_owned(),
        value: value.into(),
    }
}

fn optional_number(value: Option<f64>, unit: &str) -> String {
    value.map_or_else(|| "-".to_owned(), |v| display_number(v, unit))
}

fn card(label: &str, metric: &MetricResult) -> Card {
    let (value, reason) = match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => {
            (display_number(value, &metric.unit), metric.reason.clone())
        }
        (MetricStatus::Partial, _, Some(known)) => (
            format!("at least {}", display_number(known, &metric.unit)),
            metric.reason.clone(),
        ),
        (status, _, _) => (status.as_str().to_owned(), metric.reason.clone()),
    };
    Card {
        label: label.to_owned(),
        status: metric.status.as_str(),
        value,
        reason,
        method: metric.method.clone(),
        scope: metric.scope.clone(),
    }
}

fn context_facts(context: &Context) -> Vec<Fact> {
    let unknown = |value: &Option<String>| or_unknown(value.as_deref()).to_owned();
    let mut facts = vec![
        fact("Device", unknown(&context.device)),
        fact("Device name", unknown(&context.device_name)),
        fact("Threads", threads_text(context.torch_threads)),
        fact("torch", unknown(&context.torch_version)),
        fact("Python", unknown(&context.python_version)),
        fact("torchscan", context.torchscan_version.clone()),
    ];
    if let Some(model_type) = &context.model_type {
        facts.push(fact("Model", model_type.clone()));
    }
    if let Some(platform) = &context.platform {
        facts.push(fact("Platform", platform.clone()));
    }
    if !context.dtypes.is_empty() {
        facts.push(fact(
            "dtypes",
            crate::schema::common::dtypes_text(&context.dtypes, ", "),
        ));
    }
    facts
}

/// The header of a report that compares two others: only what its own context records (the
/// torchscan version that compared them), never `unknown` for what belongs to the two sides.
fn recorded_context_facts(context: &Context) -> Vec<Fact> {
    context_rows(context, context)
        .into_iter()
        .map(|row| fact(&row.label, row.left))
        .collect()
}

/// The section that shows both sides' contexts, with the rows that differ marked.
fn contexts_section(
    (left, left_context): (&'static str, &Context),
    (right, right_context): (&'static str, &Context),
) -> Section {
    let rows: Vec<SideRow> = context_rows(left_context, right_context)
        .into_iter()
        .map(
            |ContextRow {
                 label,
                 left,
                 right,
                 differs,
             }| SideRow {
                label,
                left,
                right,
                differs,
            },
        )
        .collect();
    let differing = rows.iter().filter(|row| row.differs).count();
    let note = match differing {
        0 => "The two contexts record the same settings.".to_owned(),
        1 => "1 setting differs (marked \u{2260}).".to_owned(),
        n => format!("{n} settings differ (marked \u{2260})."),
    };
    Section {
        title: "Contexts".to_owned(),
        note: Some(note),
        sides: Some(SideBySide { left, right, rows }),
        ..Section::default()
    }
}

fn diagnostic_rows(diagnostics: &[Diagnostic]) -> Vec<DiagnosticRow> {
    diagnostics
        .iter()
        .map(|d| DiagnosticRow {
            severity: d.severity.as_str(),
            code: serde_name(&d.code),
            message: d.message.clone(),
            metric: d.metric.clone(),
            path: d.path.as_deref().map(|path| display_path(path).to_owned()),
            operator: d.operator.clone(),
        })
        .collect()
}

fn build_page(report: &Report) -> Page {
    let kind = report.kind().as_str();
    let context = match report {
        // The report's own context records the torchscan version that compared; the two
        // sides' contexts are shown side by side in the page.
        Report::BenchmarkComparison(_) | Report::ReportDiff(_) => {
            recorded_context_facts(report.context())
        }
        _ => context_facts(report.context()),
    };
    let mut page = Page {
        kind: kind.to_owned(),
        title: format!("torchscan {kind} report"),
        context,
        diagnostics: diagnostic_rows(report.diagnostics()),
        ..Page::default()
    };
    match report {
        Report::Analysis(r) => analysis_page(&mut page, r),
        Report::Flops(r) => flops_page(&mut page, r),
        Report::Benchmark(r) => benchmark_page(&mut page, r),
        Report::PeakMemory(r) => peak_memory_page(&mut page, r),
        Report::OutputCheck(r) => output_check_page(&mut page, r),
        Report::BenchmarkComparison(r) => comparison_page(&mut page, r),
        Report::ReportDiff(r) => diff_page(&mut page, r),
    }
    page
}

fn operator_flops_section(title: &str, flops: &OperatorFlops) -> Vec<Section> {
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

fn analysis_page(page: &mut Page, report: &AnalysisReport) {
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

fn flops_page(page: &mut Page, report: &FlopReport) {
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

fn coordinate(value: f64) -> String {
    format!("{value:.1}")
}

/// How far above the third quartile, in IQRs, the chart's range reaches before it clips a block
/// (Tukey's fence for outliers).
const CHART_FENCE_IQRS: f64 = 1.5;
/// The least vertical distance between two axis labels, in SVG units (the font is 11 px).
const LABEL_GAP: f64 = 12.0;

/// Baselines for the Q3, median and Q1 labels (top to bottom), at least [`LABEL_GAP`] apart and
/// inside `[first, last]`, each as near to its line as that allows.
fn spread_labels(lines_y: [f64; 3], first: f64, last: f64) -> [f64; 3] {
    let mut placed = lines_y.map(|y| y + 4.0);
    for i in 1..placed.len() {
        placed[i] = placed[i].max(placed[i - 1] + LABEL_GAP);
    }
    let overflow = placed[2] - last;
    if overflow > 0.0 {
        placed = placed.map(|y| y - overflow);
    }
    let underflow = first - placed[0];
    if underflow > 0.0 {
        placed = placed.map(|y| y + underflow);
    }
    placed
}

fn timing_chart(report: &BenchmarkReport) -> Option<Chart> {
    let timing = report.timing.as_ref()?;
    if timing.calls_per_block == 0 || timing.block_durations_s.is_empty() {
        return None;
    }
    let per_call: Vec<f64> = timing
        .block_durations_s
        .iter()
        .map(|d| d / timing.calls_per_block as f64)
        .collect();
    let [q1, median, q3] = stats::quartiles(&per_call).ok()?;
    let low = stats::min(&per_call).ok()?;
    let slowest = stats::max(&per_call).ok()?;
    // A few slow blocks must not squash the quartiles into one line: the range stops at a fence
    // above Q3, and slower blocks sit on the top edge, drawn hollow and counted in the caption.
    let fence = q3 + CHART_FENCE_IQRS * (q3 - q1);
    let high = if q3 > q1 && slowest > fence {
        fence
    } else {
        slowest
    };
    let (width, height) = (640u32, 200u32);
    let (plot_left, plot_right) = (110u32, width - 10);
    let (left, right, top, bottom) = (
        f64::from(plot_left),
        f64::from(width - plot_right),
        10.0,
        10.0,
    );
    let span = if high > low {
        high - low
    } else {
        high.abs().max(1e-12)
    };
    let (low, high) = (low - span * 0.05, high + span * 0.05);
    let plot_height = f64::from(height) - top - bottom;
    let y_of = |v: f64| top + (high - v.min(high)) / (high - low) * plot_height;
    let plot_width = f64::from(width) - left - right;
    let n = per_call.len();
    let x_of = |i: usize| {
        if n == 1 {
            left + plot_width / 2.0
        } else {
            left + plot_width * i as f64 / (n - 1) as f64
        }
    };
    let points: Vec<Point> = per_call
        .iter()
        .enumerate()
        .map(|(i, v)| Point {
            x: coordinate(x_of(i)),
            y: coordinate(y_of(*v)),
            clipped: *v > high,
        })
        .collect();
    let clipped = points.iter().filter(|p| p.clipped).count();
    let label_y = spread_labels(
        [y_of(q3), y_of(median), y_of(q1)],
        top + 4.0,
        f64::from(height) - 2.0,
    );
    let labels = [("Q3", q3), ("median", median), ("Q1", q1)]
        .into_iter()
        .zip(label_y)
        .map(|((name, v), y)| AxisLabel {
            y: coordinate(y),
            text: format!("{name} {}", display_number(v, "s")),
        })
        .collect();
    let mut caption = format!(
        "{} timed blocks of {} calls: per-call mean of each block; median {}, IQR {} to {}",
        float_count_text(n as u64),
        float_count_text(timing.calls_per_block),
        display_number(median, "s"),
        display_number(q1, "s"),
        display_number(q3, "s"),
    );
    if clipped > 0 {
        let _ = write!(
            caption,
            "; {} slower block{} (up to {}) drawn hollow at the top edge",
            float_count_text(clipped as u64),
            if clipped == 1 { "" } else { "s" },
            display_number(slowest, "s"),
        );
    }
    Some(Chart {
        width,
        height,
        plot_left,
        plot_right,
        points,
        median_y: coordinate(y_of(median)),
        q1_y: coordinate(y_of(q3)),
        q3_y: coordinate(y_of(q1)),
        iqr_height: coordinate((y_of(q1) - y_of(q3)).max(0.0)),
        labels,
        caption,
    })
}

fn benchmark_page(page: &mut Page, report: &BenchmarkReport) {
    let m = &report.metrics;
    let w = &report.workload;
    let mut facts = vec![];
    if let Some(name) = &w.name {
        facts.push(fact("Workload", name.clone()));
    }
    facts.push(fact(
        "Work per call",
        format!("{} {}", group_thousands(w.work_units, 3), w.work_unit),
    ));
    facts.push(fact(
        "Passes",
        report
            .settings
            .passes
            .iter()
            .map(serde_name)
            .collect::<Vec<_>>()
            .join(", "),
    ));
    if let Some(timing) = &report.timing {
        facts.push(fact("Warm-up calls", float_count_text(timing.warmup_calls)));
        facts.push(fact(
            "Calls per block",
            float_count_text(timing.calls_per_block),
        ));
        facts.push(fact(
            "Timer overhead",
            display_number(timing.timer_overhead_s, "s"),
        ));
    }
    page.sections.push(Section {
        title: "Latency".to_owned(),
        facts,
        cards: vec![
            card("First call", &m.first_call),
            card("Latency (block median)", &m.latency),
            card("Latency IQR", &m.latency_iqr),
            card("Throughput", &m.throughput),
        ],
        chart: timing_chart(report),
        ..Section::default()
    });
    let noise = m.noise_metrics();
    if !noise.is_empty() {
        page.sections.push(Section {
            title: "Machine noise".to_owned(),
            note: Some(
                "What competed with the workload while it was timed, read at the start and the \
                 end of the timed phase."
                    .to_owned(),
            ),
            cards: noise
                .into_iter()
                .map(|(key, metric)| card(noise_label(key), metric))
                .collect(),
            ..Section::default()
        });
    }
    page.sections.push(Section {
        title: "Memory".to_owned(),
        note: Some("Each scope is measured on its own; they are never summed.".to_owned()),
        cards: vec![
            card("PyTorch peak memory", &m.tensor_memory_peak),
            card("Allocator reserved peak", &m.allocator_reserved_peak),
            card("Process peak RSS", &m.process_rss_peak),
            card("Workload peak RSS", &m.process_rss_workload_peak),
            card("Baseline RSS after set-up", &m.process_rss_baseline),
        ],
        ..Section::default()
    });
    match &report.operator_flops {
        Some(flops) => page
            .sections
            .extend(operator_flops_section("Operator FLOPs", flops)),
        None => page.sections.push(Section {
            title: "Operator FLOPs".to_owned(),
            cards: vec![card("Operator FLOPs", &m.operator_flops)],
            ..Section::default()
        }),
    }
    let p = &report.profiler;
    page.sections.push(Section {
        title: "Profiler".to_owned(),
        note: Some("A separate instrumented pass; times include instrumentation.".to_owned()),
        facts: vec![
            fact("Status", p.status.as_str()),
            fact("Reason", p.reason.clone().unwrap_or_else(|| "-".to_owned())),
            fact("Method", p.method.clone()),
            fact("Scope", p.scope.clone()),
            fact(
                "Calls",
                match (p.calls, p.requested_calls) {
                    (Some(calls), Some(requested)) if calls < requested => format!(
                        "{} of {} requested (the time budget stopped the pass)",
                        float_count_text(calls),
                        float_count_text(requested)
                    ),
                    (calls, _) => calls.map_or_else(|| "-".to_owned(), float_count_text),
                },
            ),
        ],
        table: (!p.top_operators.is_empty()).then(|| Table {
            columns: vec!["Operator", "Calls", "Self time", "Total time"],
            numeric: vec![false, true, true, true],
            rows: p
                .top_operators
                .iter()
                .map(|op| Row {
                    indent: 0,
                    cells: vec![
                        op.operator.clone(),
                        float_count_text(op.calls),
                        display_number(op.self_time_s, "s"),
                        display_number(op.total_time_s, "s"),
                    ],
                    bar: None,
                })
                .collect(),
        }),
        ..Section::default()
    });
}

fn peak_memory_page(page: &mut Page, report: &PeakMemoryReport) {
    page.sections.push(Section {
        title: "Peak memory".to_owned(),
        note: Some("Each scope is measured on its own; they are never summed.".to_owned()),
        facts: report
            .callable
            .iter()
            .map(|c| fact("Callable", c.clone()))
            .collect(),
        cards: vec![
            card("PyTorch peak memory", &report.tensor_memory_peak),
            card("Baseline at start", &report.baseline),
            card("Allocator reserved peak", &report.allocator_reserved_peak),
        ],
        ..Section::default()
    });
}

fn optional_error(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3e}"))
}

fn output_check_page(page: &mut Page, report: &OutputCheckReport) {
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
                    bar: None,
                })
                .collect(),
        }),
        ..Section::default()
    });
}

fn comparison_page(page: &mut Page, report: &BenchmarkComparisonReport) {
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
                    "withheld".to_owned()
                } else {
                    optional_number(v, &d.unit)
                }
            };
            let ratio = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
            Row {
                indent: 0,
                cells: vec![
                    d.metric.clone(),
                    serde_name(&d.status),
                    shown(d.baseline),
                    shown(d.candidate),
                    shown(d.delta),
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
            bar: None,
        })
        .collect()
}

fn diff_page(page: &mut Page, report: &ReportDiffReport) {
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
                .map(|(name, t)| Row {
                    indent: 0,
                    cells: vec![
                        name.to_owned(),
                        t.status.as_str().to_owned(),
                        optional_number(t.before.value, &t.unit),
                        optional_number(t.after.value, &t.unit),
                        optional_number(t.delta, &t.unit),
                        t.reason.clone().unwrap_or_default(),
                    ],
                    bar: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_keep_apart_and_inside_the_chart() {
        // Three lines a pixel apart: the labels are pushed apart around them, in order.
        let placed = spread_labels([100.0, 101.0, 102.0], 14.0, 198.0);
        assert_eq!(placed, [104.0, 116.0, 128.0]);
        // Near the bottom edge: shifted up as a group, still apart.
        let placed = spread_labels([189.0, 189.5, 190.0], 14.0, 198.0);
        assert_eq!(placed, [174.0, 186.0, 198.0]);
        // Near the top edge: shifted down.
        let placed = spread_labels([0.0, 0.0, 0.0], 14.0, 198.0);
        assert_eq!(placed, [14.0, 26.0, 38.0]);
        // Lines far apart keep their own heights.
        let placed = spread_labels([20.0, 80.0, 150.0], 14.0, 198.0);
        assert_eq!(placed, [24.0, 84.0, 154.0]);
    }
}
