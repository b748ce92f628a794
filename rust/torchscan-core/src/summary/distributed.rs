//! Text of `distributed_benchmark` reports: the job's step time, throughput and first call, the
//! straggler, one row per rank, the contexts and the diagnostics.

use super::{context_rows, diagnostic_text, push_diagnostics, push_line};

use crate::format::{
    UNKNOWN, float_count_text, percent_text, plural, ranks_text, readable_metric_text,
    readable_number, reason_suffix, status_metric_cell,
};
use crate::schema::common::{Context, Diagnostic, MetricResult, MetricStatus};
use crate::schema::distributed::{DistributedBenchmarkReport, RankSummary, Straggler};

/// The rank table's columns: header, and whether the column holds text (left-aligned) rather
/// than numbers (right-aligned).
const RANK_COLUMNS: [(&str, bool); 10] = [
    ("Rank", false),
    ("Local rank", false),
    ("Host", true),
    ("Device", true),
    ("Latency", false),
    ("Barrier wait", false),
    ("Slowest in", false),
    ("Tensor peak", false),
    ("Reserved peak", false),
    ("RSS peak", false),
];

/// What the rank table's columns hold, under it.
const RANK_LEGEND: [&str; 3] = [
    "Latency: the rank's own block median per call. Slowest in: blocks in which it was the slowest.",
    "Barrier wait: summed over the barriers before the blocks, outside the timed intervals.",
    "Peaks, each its own scope, never summed: Tensor (PyTorch tensors), Reserved (allocator \
     reserved bytes), RSS (the rank's own process).",
];

/// The context row that the rank table shows for every rank, left out of the context
/// differences: each rank measures its own device.
const PER_RANK_CONTEXT_ROW: &str = "Device";

/// `host a` or `hosts a, b`.
fn hosts_text(hosts: &[String]) -> String {
    match hosts {
        [] => format!("hosts {UNKNOWN}"),
        [host] => format!("host {host}"),
        hosts => format!("hosts {}", hosts.join(", ")),
    }
}

/// Cells aligned under their headers, text left and numbers right, between rules.
fn push_table(out: &mut String, indent: usize, columns: &[(&str, bool)], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = columns
        .iter()
        .map(|(header, _)| header.chars().count())
        .collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let format_row = |cells: &[&str]| {
        let mut line = String::new();
        for (index, ((cell, width), (_, text))) in
            cells.iter().zip(&widths).zip(columns).enumerate()
        {
            if index > 0 {
                line.push_str("  ");
            }
            let pad = std::iter::repeat_n(' ', width.saturating_sub(cell.chars().count()));
            if *text {
                line.push_str(cell);
                line.extend(pad);
            } else {
                line.extend(pad);
                line.push_str(cell);
            }
        }
        line.trim_end().to_owned()
    };
    let headers: Vec<&str> = columns.iter().map(|(header, _)| *header).collect();
    let header_line = format_row(&headers);
    let rule = "-".repeat(header_line.chars().count());
    push_line(out, indent, &rule);
    push_line(out, indent, &header_line);
    push_line(out, indent, &rule);
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        push_line(out, indent, &format_row(&cells));
    }
    push_line(out, indent, &rule);
}

/// The lowest rank whose own first call is the job's (the slowest rank's), when one is.
pub(crate) fn first_call_rank(report: &DistributedBenchmarkReport) -> Option<u64> {
    let job = report.timing.first_call_s;
    report
        .rank_reports
        .iter()
        .position(|rank| {
            rank.timing
                .as_ref()
                .is_some_and(|timing| timing.first_call_s == job)
        })
        .map(|index| index as u64)
}

/// `Straggler: rank 1, slowest in 3 of 4 blocks; costs ... per call, 23.8% of the step time`, or
/// `Straggler: none named (why)`.
fn straggler_line(report: &DistributedBenchmarkReport) -> String {
    let straggler = &report.straggler;
    let cost = &report.metrics.straggler_cost;
    let Some(rank) = straggler.rank else {
        let reason = straggler.reason.as_deref().or(cost.reason.as_deref());
        return format!("Straggler: none named{}", reason_suffix(reason));
    };
    let mut line = format!("Straggler: rank {rank}");
    let slowest = usize::try_from(rank)
        .ok()
        .and_then(|index| straggler.slowest_blocks.get(index));
    if let Some(blocks) = slowest {
        line.push_str(&format!(
            ", slowest in {} of {}",
            float_count_text(*blocks),
            plural(report.blocks.len(), "block")
        ));
    }
    match (cost.status, straggler.cost_ratio) {
        (MetricStatus::Complete, Some(ratio)) => line.push_str(&format!(
            "; costs {} per call, {} of the step time",
            readable_metric_text(cost),
            percent_text(ratio)
        )),
        (MetricStatus::Complete, None) => {
            line.push_str(&format!("; costs {} per call", readable_metric_text(cost)))
        }
        _ => line.push_str(&format!("; cost {}", readable_metric_text(cost))),
    }
    line
}

/// The metrics of a rank row that the table shows, with their labels.
fn rank_metrics(rank: &RankSummary) -> [(&'static str, &MetricResult); 4] {
    [
        ("Latency", &rank.latency),
        ("Tensor peak", &rank.tensor_memory_peak),
        ("Reserved peak", &rank.allocator_reserved_peak),
        ("RSS peak", &rank.process_rss_peak),
    ]
}

fn rank_row(rank: &RankSummary, straggler: &Straggler) -> Vec<String> {
    let [latency, tensor, reserved, rss] =
        rank_metrics(rank).map(|(_, metric)| status_metric_cell(metric).0);
    let slowest = usize::try_from(rank.rank)
        .ok()
        .and_then(|index| straggler.slowest_blocks.get(index))
        .map_or_else(|| "-".to_owned(), |blocks| float_count_text(*blocks));
    vec![
        rank.rank.to_string(),
        rank.local_rank.to_string(),
        rank.host.clone(),
        rank.device.clone().unwrap_or_else(|| UNKNOWN.to_owned()),
        latency,
        readable_number(rank.barrier_wait_s, "s"),
        slowest,
        tensor,
        reserved,
        rss,
    ]
}

/// Every rank metric without a whole value, grouped by column, status and reason, in the order
/// the table shows them: the column (`RSS peak`) and what it holds
/// (`unavailable on rank 1 (why)`).
pub(crate) fn rank_metric_notes(ranks: &[RankSummary]) -> Vec<(&'static str, String)> {
    let mut groups: Vec<(&'static str, MetricStatus, Option<&str>, Vec<u64>)> = Vec::new();
    for rank in ranks {
        for (label, metric) in rank_metrics(rank) {
            if metric.status == MetricStatus::Complete && metric.value.is_some() {
                continue;
            }
            let key = (label, metric.status, metric.reason.as_deref());
            match groups.iter_mut().find(|(l, s, r, _)| (*l, *s, *r) == key) {
                Some((_, _, _, members)) => members.push(rank.rank),
                None => groups.push((key.0, key.1, key.2, vec![rank.rank])),
            }
        }
    }
    // Column by column, as the table reads; ranks in order within a column.
    let order = |label: &str| {
        RANK_COLUMNS
            .iter()
            .position(|(header, _)| *header == label)
            .unwrap_or(RANK_COLUMNS.len())
    };
    groups.sort_by_key(|(label, ..)| order(label));
    groups
        .into_iter()
        .map(|(label, status, reason, members)| {
            let text = format!(
                "{} on {}{}",
                status.as_str(),
                ranks_text(&members),
                reason_suffix(reason)
            );
            (label, text)
        })
        .collect()
}

/// Rank 0's recorded settings, `label value` joined by `; `.
fn context_text(context: &Context) -> String {
    context_rows(context, context)
        .into_iter()
        .map(|row| format!("{} {}", row.label, row.left))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Each rank whose context differs from rank 0's (the device aside, which the rank table shows),
/// with the settings that differ: `(1, "Threads 4 -> 8")`.
pub(crate) fn context_differences(report: &DistributedBenchmarkReport) -> Vec<(u64, String)> {
    report
        .rank_reports
        .iter()
        .enumerate()
        .filter_map(|(index, rank)| {
            let differing: Vec<String> = context_rows(&report.context, &rank.context)
                .into_iter()
                .filter(|row| row.differs && row.label != PER_RANK_CONTEXT_ROW)
                .map(|row| format!("{} {} -> {}", row.label, row.left, row.right))
                .collect();
            (!differing.is_empty()).then(|| (index as u64, differing.join("; ")))
        })
        .collect()
}

/// The ranks' own diagnostics, each distinct one once, in the order first written, with the
/// ranks that wrote it.
pub(crate) fn rank_diagnostics(
    report: &DistributedBenchmarkReport,
) -> Vec<(&Diagnostic, Vec<u64>)> {
    let mut found: Vec<(&Diagnostic, Vec<u64>)> = Vec::new();
    for (index, rank) in report.rank_reports.iter().enumerate() {
        for diagnostic in &rank.diagnostics {
            match found.iter_mut().find(|(seen, _)| *seen == diagnostic) {
                Some((_, ranks)) => ranks.push(index as u64),
                None => found.push((diagnostic, vec![index as u64])),
            }
        }
    }
    found
}

fn push_rank_diagnostics(out: &mut String, report: &DistributedBenchmarkReport) {
    let found = rank_diagnostics(report);
    if found.is_empty() {
        return;
    }
    push_line(out, 2, "Diagnostics of the ranks:");
    for (diagnostic, ranks) in found {
        push_line(
            out,
            4,
            &format!("{} [{}]", diagnostic_text(diagnostic), ranks_text(&ranks)),
        );
    }
}

pub(super) fn summarize_distributed(out: &mut String, report: &DistributedBenchmarkReport) {
    let job = &report.job;
    push_line(
        out,
        0,
        &format!(
            "Distributed workload {}: world size {}, backend {}, {}",
            report.workload.name.as_deref().unwrap_or("(unnamed)"),
            job.world_size,
            job.backend,
            hosts_text(&job.hosts)
        ),
    );
    let m = &report.metrics;
    push_line(
        out,
        2,
        &format!(
            "Step time (slowest rank, median per call): {}; IQR {}; {} of {} {}",
            readable_metric_text(&m.step_time),
            readable_metric_text(&m.step_time_iqr),
            plural(report.blocks.len(), "block"),
            float_count_text(report.timing.calls_per_block),
            if report.timing.calls_per_block == 1 {
                "call"
            } else {
                "calls"
            }
        ),
    );
    push_line(
        out,
        2,
        &format!(
            "Job throughput (every rank's work): {}",
            readable_metric_text(&m.throughput)
        ),
    );
    let mut first_call = format!(
        "First call (slowest rank): {}",
        readable_metric_text(&m.first_call)
    );
    if m.first_call.status == MetricStatus::Complete
        && let Some(rank) = first_call_rank(report)
    {
        first_call.push_str(&format!(" on rank {rank}"));
    }
    push_line(out, 2, &first_call);
    push_line(out, 2, &straggler_line(report));
    if let Some(collectives) = job.collectives_per_call {
        push_line(
            out,
            2,
            &format!(
                "Collectives per call: {} (the most any rank counted, every process group)",
                float_count_text(collectives)
            ),
        );
    }
    push_line(out, 2, "Ranks:");
    let rows: Vec<Vec<String>> = report
        .ranks
        .iter()
        .map(|rank| rank_row(rank, &report.straggler))
        .collect();
    push_table(out, 4, &RANK_COLUMNS, &rows);
    for line in RANK_LEGEND {
        push_line(out, 4, line);
    }
    for (label, note) in rank_metric_notes(&report.ranks) {
        push_line(out, 4, &format!("{label}: {note}"));
    }
    push_line(
        out,
        2,
        &format!("Context (rank 0): {}", context_text(&report.context)),
    );
    let differences = context_differences(report);
    if !differences.is_empty() {
        push_line(out, 2, "Contexts that differ from rank 0's:");
        for (rank, settings) in differences {
            push_line(out, 4, &format!("rank {rank}: {settings}"));
        }
    }
    push_diagnostics(out, &report.diagnostics);
    push_rank_diagnostics(out, report);
}
