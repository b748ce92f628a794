//! The pages of benchmark and peak-memory reports: latency cards, the chart of the timed blocks,
//! machine noise, memory scopes, the hardware peak and its roofline (`roofline`) and the
//! profiler pass.

use std::fmt::Write as _;

use super::analysis::operator_flops_section;
use super::{
    AxisLabel, Chart, Fact, Page, Point, Row, Section, Table, card, fact, number_fact,
    optional_number,
};

use crate::format::{
    NOT_RECORDED, coordinate, exact_number, float_count_text, noise_label, plural,
    process_group_words, readable_number, readable_with_exact, serde_name,
};
use crate::schema::benchmark::{BenchmarkReport, ProfilerTrace, TimingEvidence};
use crate::schema::peak_memory::PeakMemoryReport;
use crate::stats;

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

/// What a chart of timed blocks plots, in words for its caption.
pub(super) struct BlockChartWords {
    /// The blocks, after their count: `timed blocks`.
    pub blocks: &'static str,
    /// What each point is: `per-call mean of each block`.
    pub points: &'static str,
}

/// The chart of a benchmark's timed blocks.
const BENCHMARK_BLOCKS: BlockChartWords = BlockChartWords {
    blocks: "timed blocks",
    points: "per-call mean of each block",
};

fn timing_chart(report: &BenchmarkReport) -> Option<Chart> {
    block_chart(report.timing.as_ref()?, &BENCHMARK_BLOCKS)
}

/// The per-call time of every block of `timing`, in the order they ran, over its quartiles;
/// `None` without blocks.
pub(super) fn block_chart(timing: &TimingEvidence, words: &BlockChartWords) -> Option<Chart> {
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
            text: format!("{name} {}", readable_number(v, "s")),
            title: Some(exact_number(v, "s")),
        })
        .collect();
    let mut caption = format!(
        "{} {} of {} calls: {}; median {}, IQR {} to {}",
        float_count_text(n as u64),
        words.blocks,
        float_count_text(timing.calls_per_block),
        words.points,
        readable_number(median, "s"),
        readable_number(q1, "s"),
        readable_number(q3, "s"),
    );
    if clipped > 0 {
        let _ = write!(
            caption,
            "; {} slower block{} (up to {}) drawn hollow at the top edge",
            float_count_text(clipped as u64),
            if clipped == 1 { "" } else { "s" },
            readable_number(slowest, "s"),
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

/// In a distributed job: where this rank stood, its waits at the barriers and the collectives of
/// one call.
fn distributed_section(report: &BenchmarkReport) -> Option<Section> {
    let d = report.context.distributed.as_ref()?;
    let mut facts = vec![
        fact("Rank", format!("{} of {}", d.rank, d.world_size)),
        fact("Local rank", d.local_rank.to_string()),
        fact("Backend", d.backend.clone()),
        fact("Host", d.host.clone()),
        fact("Process group", process_group_words(d.process_group)),
    ];
    let timing = report.timing.as_ref();
    match timing.and_then(|t| t.barrier_waits_s.as_deref()) {
        Some(waits) => {
            let sum: f64 = waits.iter().sum();
            // Each wait is finite in a valid report; their sum need not be.
            let mut total = if sum.is_finite() {
                number_fact("Barrier waits", sum, "s")
            } else {
                fact("Barrier waits", "a total beyond the range of a float")
            };
            total.value = format!("{} over {}", total.value, plural(waits.len(), "block"));
            facts.push(total);
        }
        None => facts.push(fact("Barrier waits", NOT_RECORDED)),
    }
    if let Some(collectives) = timing.and_then(|t| t.collectives_per_call) {
        facts.push(fact("Collectives per call", float_count_text(collectives)));
    }
    Some(Section {
        title: "Distributed job".to_owned(),
        note: Some(
            "The blocks were aligned across the ranks by a barrier before each; the waits at \
             the barriers are outside the timed intervals."
                .to_owned(),
        ),
        facts,
        ..Section::default()
    })
}

pub(super) fn benchmark_page(page: &mut Page, report: &BenchmarkReport) {
    let m = &report.metrics;
    let w = &report.workload;
    page.sections.extend(distributed_section(report));
    let mut facts = vec![];
    if let Some(name) = &w.name {
        facts.push(fact("Workload", name.clone()));
    }
    facts.push(number_fact("Work per call", w.work_units, &w.work_unit));
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
        facts.push(number_fact("Timer overhead", timing.timer_overhead_s, "s"));
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
    let mut memory = vec![
        card("PyTorch peak memory", &m.tensor_memory_peak),
        card("Allocator reserved peak", &m.allocator_reserved_peak),
        card("Process peak RSS", &m.process_rss_peak),
        card("Workload peak RSS", &m.process_rss_workload_peak),
        card("Baseline RSS after set-up", &m.process_rss_baseline),
    ];
    if let Some(rank_rss) = &m.rank_process_rss_peak {
        memory.push(card("Rank process peak RSS", rank_rss));
    }
    page.sections.push(Section {
        title: "Memory".to_owned(),
        note: Some("Each scope is measured on its own; they are never summed.".to_owned()),
        cards: memory,
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
    page.sections
        .extend(super::roofline::hardware_section(report));
    let p = &report.profiler;
    let mut facts = vec![
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
    ];
    if let Some(trace) = &p.trace {
        facts.extend(trace_facts(trace));
    }
    page.sections.push(Section {
        title: "Profiler".to_owned(),
        note: Some("A separate instrumented pass; times include instrumentation.".to_owned()),
        facts,
        table: (!p.top_operators.is_empty()).then(|| Table {
            columns: vec!["Operator", "Calls", "Self time", "Total time"],
            numeric: vec![false, true, true, true],
            rows: p
                .top_operators
                .iter()
                .map(|op| {
                    let (self_time, self_exact) = optional_number(Some(op.self_time_s), "s");
                    let (total_time, total_exact) = optional_number(Some(op.total_time_s), "s");
                    Row {
                        indent: 0,
                        cells: vec![
                            op.operator.clone(),
                            float_count_text(op.calls),
                            self_time,
                            total_time,
                        ],
                        titles: vec![None, None, self_exact, total_exact],
                        bar: None,
                    }
                })
                .collect(),
        }),
        ..Section::default()
    });
}

/// The kept trace: a link to the file (its path as the text), what it is and what it covers.
fn trace_facts(trace: &ProfilerTrace) -> [Fact; 3] {
    [
        Fact {
            label: "Trace".to_owned(),
            value: trace.path.clone(),
            href: Some(file_href(&trace.path)),
            title: None,
        },
        fact(
            "Trace file",
            format!(
                "{}, {}; open it in Perfetto (ui.perfetto.dev) or chrome://tracing",
                trace.format.describe(),
                readable_with_exact(trace.bytes as f64, "B")
            ),
        ),
        fact(
            "Trace scope",
            format!(
                "{}; instrumented, so its times are slower than the timed blocks'",
                trace.scope
            ),
        ),
    ]
}

/// The link target of a file path: every byte but unreserved URL characters and `/`
/// percent-encoded, so no part of a path can read as a scheme (`javascript:`), a query, a
/// fragment or a host; an absolute path becomes a `file:` URL, a relative one stays relative
/// (to the page, as the path was to the directory the measurement ran in).
fn file_href(path: &str) -> String {
    let mut href = String::with_capacity(path.len() + 8);
    let relative = match path.strip_prefix('/') {
        Some(_) => {
            href.push_str("file:///");
            path.trim_start_matches('/')
        }
        None => path,
    };
    for byte in relative.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                href.push(char::from(byte));
            }
            _ => {
                let _ = write!(href, "%{byte:02X}");
            }
        }
    }
    href
}

pub(super) fn peak_memory_page(page: &mut Page, report: &PeakMemoryReport) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_path_links_without_a_scheme_a_host_or_a_query() {
        assert_eq!(file_href("traces/linear.json"), "traces/linear.json");
        assert_eq!(file_href("/tmp/run 1/t.json"), "file:///tmp/run%201/t.json");
        // `//host/x` names the same file as `/host/x` on Linux, never a host.
        assert_eq!(
            file_href("//evil.example/t.json"),
            "file:///evil.example/t.json"
        );
        assert_eq!(
            file_href("javascript:alert(1)"),
            "javascript%3Aalert%281%29"
        );
        assert_eq!(file_href("a?b#c%d\\"), "a%3Fb%23c%25d%5C");
        assert_eq!(file_href("\"a\"<b>&"), "%22a%22%3Cb%3E%26");
        assert_eq!(
            file_href("caf\u{e9}\u{202e}.json"),
            "caf%C3%A9%E2%80%AE.json"
        );
    }

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
