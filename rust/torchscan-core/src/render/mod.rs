//! The HTML page of every report kind: one self-contained file (inline CSS, no script, no
//! external request), light and dark, printable.
//!
//! The page is rendered with minijinja from templates embedded at compile time. Every string of
//! the report reaches the page through HTML autoescape (the templates are named `*.html.j2`),
//! after its control and bidirectional formatting characters are escaped (`\u202e`);
//! numbers are formatted in Rust by [`crate::format`], exactly as the text summary formats them.
//!
//! This module holds the entry points, the page model and the parts every page shares (the
//! context facts, the two contexts side by side, the diagnostics). One submodule per report
//! family fills the sections, as in [`crate::summary`]: `analysis` (analysis and FLOP reports),
//! `benchmark` (benchmark and peak-memory reports), `output_check`, `comparison` (benchmark
//! comparisons), `diff` (report diffs) and `distributed` (the merged benchmarks of a distributed
//! job).

use std::borrow::Cow;
use std::fmt;

use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::format::{
    display_path, exact_number, or_unknown, readable_metric, readable_number, serde_name,
    threads_text,
};
use crate::problem::Problem;
use crate::read::read_report;
use crate::schema::Report;
use crate::schema::common::{Context, Diagnostic, MetricResult, MetricStatus};
use crate::summary::{ContextRow, context_rows, display_text};

mod analysis;
mod benchmark;
mod comparison;
mod diff;
mod distributed;
mod output_check;
mod roofline;

use analysis::{analysis_page, flops_page};
use benchmark::{benchmark_page, peak_memory_page};
use comparison::comparison_page;
use diff::diff_page;
use distributed::distributed_page;
use output_check::output_check_page;

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
    /// A link target: the value is shown as a link to it.
    href: Option<String>,
    /// The exact value of a number shown rounded, as the element's `title`.
    title: Option<String>,
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
    roofline: Option<RooflineChart>,
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
    /// The exact value of a number shown rounded, as the element's `title`.
    title: Option<String>,
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
    /// The exact values of cells shown rounded, by cell position, as their `title`s; shorter than
    /// `cells` (often empty) when the cells past it have none.
    titles: Vec<Option<String>>,
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

/// A roofline on log-log axes: the roofs of the peak used, the workload's point (or a line at its
/// achieved rate when its arithmetic intensity is unknown) and the labels, in SVG units.
#[derive(Debug, Serialize)]
struct RooflineChart {
    width: u32,
    height: u32,
    /// The plot area: left, top, width and height.
    frame: [String; 4],
    /// The path of the two roofs: the bandwidth slope up to the ridge point, then the ceiling.
    roof: String,
    /// The dashed vertical line at the ridge point.
    ridge: String,
    /// The workload at its arithmetic intensity and achieved rate.
    point: Option<Point>,
    /// A dashed line at the achieved rate when the workload cannot be placed.
    achieved_line: Option<String>,
    labels: Vec<ChartText>,
    caption: String,
}

/// A text of a chart, with its anchor (`start`, `middle` or `end`).
#[derive(Debug, Serialize)]
struct ChartText {
    x: String,
    y: String,
    anchor: &'static str,
    /// A rotation about (`x`, `y`), in degrees, for a label along a line.
    rotate: Option<String>,
    text: String,
    /// The exact value, as the text's SVG `<title>`.
    title: Option<String>,
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
    /// The exact value, as the label's SVG `<title>`.
    title: Option<String>,
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
        href: None,
        title: None,
    }
}

/// A fact whose value is a number: shown as people read it, its exact value as the `title`.
fn number_fact(label: &str, value: f64, unit: &str) -> Fact {
    let readable = readable_number(value, unit);
    let exact = exact_number(value, unit);
    Fact {
        title: (exact != readable).then_some(exact),
        ..fact(label, readable)
    }
}

/// A fact whose value is a metric: shown as people read it, its exact value as the `title`.
fn metric_fact(label: &str, metric: &MetricResult) -> Fact {
    let (value, title) = readable_metric(metric);
    Fact {
        title,
        ..fact(label, value)
    }
}

/// A number as people read it, `-` when absent; with its exact value when that differs.
fn optional_number(value: Option<f64>, unit: &str) -> (String, Option<String>) {
    match value {
        Some(v) => {
            let readable = readable_number(v, unit);
            let exact = exact_number(v, unit);
            let title = (exact != readable).then_some(exact);
            (readable, title)
        }
        None => ("-".to_owned(), None),
    }
}

fn card(label: &str, metric: &MetricResult) -> Card {
    let (value, title) = match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => optional_number(Some(value), &metric.unit),
        (MetricStatus::Partial, _, Some(known)) => {
            let (value, title) = optional_number(Some(known), &metric.unit);
            (format!("at least {value}"), title)
        }
        (status, _, _) => (status.as_str().to_owned(), None),
    };
    Card {
        label: label.to_owned(),
        status: metric.status.as_str(),
        value,
        title,
        reason: metric.reason.clone(),
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
        Report::DistributedBenchmark(r) => distributed_page(&mut page, r),
    }
    page
}
