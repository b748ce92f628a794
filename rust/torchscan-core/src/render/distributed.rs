//! The page of `distributed_benchmark` reports: the job's headline cards and the chart of its
//! step time per block, the straggler, every block with its slowest rank, one row per rank, the
//! contexts that differ between ranks and the ranks' own diagnostics.

use super::benchmark::{BlockChartWords, block_chart};
use super::{Page, Row, Section, Table, card, fact, number_fact, optional_number};

use crate::format::{
    UNKNOWN, display_path, float_count_text, or_unknown, percent_text, plural, ranks_text,
    serde_name, status_metric_cell,
};
use crate::schema::distributed::{DistributedBenchmarkReport, RankSummary};
use crate::summary::{context_differences, first_call_rank, rank_diagnostics, rank_metric_notes};

/// The chart of the job's blocks: each point is the slowest rank's.
const JOB_BLOCKS: BlockChartWords = BlockChartWords {
    blocks: "aligned blocks",
    points: "the slowest rank's per-call time of each block",
};

/// A row of cells with their `title`s.
fn row(cells: Vec<(String, Option<String>)>) -> Row {
    let (cells, titles) = cells.into_iter().unzip();
    Row {
        indent: 0,
        cells,
        titles,
        bar: None,
    }
}

fn plain(text: impl Into<String>) -> (String, Option<String>) {
    (text.into(), None)
}

fn job_section(report: &DistributedBenchmarkReport) -> Section {
    let job = &report.job;
    let w = &report.workload;
    let mut facts = vec![];
    if let Some(name) = &w.name {
        facts.push(fact("Workload", name.clone()));
    }
    facts.push(fact("World size", job.world_size.to_string()));
    facts.push(fact("Backend", job.backend.clone()));
    let (label, hosts) = match job.hosts.as_slice() {
        [] => ("Hosts", UNKNOWN.to_owned()),
        [host] => ("Host", host.clone()),
        hosts => ("Hosts", hosts.join(", ")),
    };
    facts.push(fact(label, hosts));
    facts.push(number_fact(
        "Work per call (job)",
        job.work_units_per_call,
        &w.work_unit,
    ));
    facts.push(number_fact(
        "Work per call (each rank)",
        w.work_units,
        &w.work_unit,
    ));
    if let Some(collectives) = job.collectives_per_call {
        facts.push(fact(
            "Collectives per call (rank 0)",
            float_count_text(collectives),
        ));
    }
    facts.push(fact(
        "Calls per block",
        float_count_text(report.timing.calls_per_block),
    ));
    facts.push(fact("Blocks", float_count_text(report.blocks.len() as u64)));
    let m = &report.metrics;
    let mut first_call = card("First call (slowest rank)", &m.first_call);
    if let Some(rank) = first_call_rank(report).filter(|_| m.first_call.value.is_some()) {
        first_call.label = format!("First call (rank {rank}, the slowest)");
    }
    Section {
        title: "Job".to_owned(),
        note: Some(
            "Block i covers the same calls on every rank, so the job's time for it is the \
             slowest rank's."
                .to_owned(),
        ),
        facts,
        cards: vec![
            card("Step time (slowest rank, median per call)", &m.step_time),
            card("Step time IQR", &m.step_time_iqr),
            card("Job throughput", &m.throughput),
            first_call,
            card("Straggler cost per call", &m.straggler_cost),
        ],
        chart: block_chart(&report.timing, &JOB_BLOCKS),
        ..Section::default()
    }
}

fn straggler_section(report: &DistributedBenchmarkReport) -> Section {
    let s = &report.straggler;
    let blocks = report.blocks.len();
    let mut facts = vec![];
    match s.rank {
        Some(rank) => {
            facts.push(fact("Straggler", format!("rank {rank}")));
            let slowest = usize::try_from(rank)
                .ok()
                .and_then(|index| s.slowest_blocks.get(index));
            if let Some(slowest) = slowest {
                facts.push(fact(
                    "Slowest in",
                    format!(
                        "{} of {}",
                        float_count_text(*slowest),
                        plural(blocks, "block")
                    ),
                ));
            }
            if let Some(cost) = s.cost_s {
                facts.push(number_fact("Cost per call", cost, "s"));
            }
            if let Some(ratio) = s.cost_ratio {
                facts.push(fact("Share of the step time", percent_text(ratio)));
            }
        }
        None => {
            facts.push(fact("Straggler", "none named"));
            facts.push(fact(
                "Reason",
                s.reason.clone().unwrap_or_else(|| "-".to_owned()),
            ));
        }
    }
    facts.push(fact("Method", s.method.clone()));
    Section {
        title: "Straggler".to_owned(),
        note: Some(
            "The rank the others waited for: the slowest in more than half of the blocks."
                .to_owned(),
        ),
        facts,
        ..Section::default()
    }
}

fn blocks_section(report: &DistributedBenchmarkReport) -> Section {
    let calls = report.timing.calls_per_block;
    let rows = report
        .blocks
        .iter()
        .enumerate()
        .map(|(index, block)| {
            let per_call = (calls > 0).then(|| block.step_time_s / calls as f64);
            row(vec![
                plain(float_count_text(index as u64)),
                optional_number(Some(block.step_time_s), "s"),
                optional_number(per_call, "s"),
                plain(block.slowest_rank.to_string()),
                optional_number(Some(block.spread_s), "s"),
            ])
        })
        .collect();
    Section {
        title: "Blocks".to_owned(),
        note: Some(format!(
            "Every aligned block of {} {}, in the order they ran: the slowest rank's \
             duration, and how much longer it took than the fastest rank (the spread).",
            float_count_text(calls),
            if calls == 1 { "call" } else { "calls" }
        )),
        table: Some(Table {
            columns: vec!["Block", "Step time", "Per call", "Slowest rank", "Spread"],
            numeric: vec![true, true, true, true, true],
            rows,
        }),
        ..Section::default()
    }
}

fn rank_row(rank: &RankSummary, report: &DistributedBenchmarkReport) -> Row {
    let slowest = usize::try_from(rank.rank)
        .ok()
        .and_then(|index| report.straggler.slowest_blocks.get(index))
        .map_or_else(|| "-".to_owned(), |blocks| float_count_text(*blocks));
    row(vec![
        plain(rank.rank.to_string()),
        plain(rank.local_rank.to_string()),
        plain(rank.host.clone()),
        plain(or_unknown(rank.device.as_deref())),
        status_metric_cell(&rank.latency),
        optional_number(Some(rank.barrier_wait_s), "s"),
        plain(slowest),
        status_metric_cell(&rank.tensor_memory_peak),
        status_metric_cell(&rank.allocator_reserved_peak),
        status_metric_cell(&rank.process_rss_peak),
    ])
}

fn ranks_section(report: &DistributedBenchmarkReport) -> Section {
    Section {
        title: "Ranks".to_owned(),
        note: Some(
            "Each rank's own numbers, from its report: latency is its block median per call; \
             barrier wait is summed over the blocks, outside the timed intervals; memory \
             scopes (PyTorch tensors, allocator reserved bytes, the rank's own process RSS) \
             are never summed."
                .to_owned(),
        ),
        facts: rank_metric_notes(&report.ranks)
            .into_iter()
            .map(|(label, text)| fact(label, text))
            .collect(),
        table: Some(Table {
            columns: vec![
                "Rank",
                "Local rank",
                "Host",
                "Device",
                "Latency",
                "Barrier wait",
                "Slowest in",
                "Tensor peak",
                "Reserved peak",
                "RSS peak",
            ],
            numeric: vec![true, true, false, false, true, true, true, true, true, true],
            rows: report
                .ranks
                .iter()
                .map(|rank| rank_row(rank, report))
                .collect(),
        }),
        ..Section::default()
    }
}

/// The ranks whose contexts differ from rank 0's; nothing when none does.
fn contexts_section(report: &DistributedBenchmarkReport) -> Option<Section> {
    let differences = context_differences(report);
    (!differences.is_empty()).then(|| Section {
        title: "Contexts that differ from rank 0's".to_owned(),
        note: Some(
            "Settings as rank 0 -> the rank; each rank's device is in the rank table.".to_owned(),
        ),
        facts: differences
            .into_iter()
            .map(|(rank, settings)| fact(&format!("Rank {rank}"), settings))
            .collect(),
        ..Section::default()
    })
}

/// The ranks' own diagnostics, each distinct one once; nothing when there is none.
fn rank_diagnostics_section(report: &DistributedBenchmarkReport) -> Option<Section> {
    let found = rank_diagnostics(report);
    (!found.is_empty()).then(|| Section {
        title: "Diagnostics of the ranks".to_owned(),
        note: Some(
            "Each rank's findings, from its report, with the ranks that made them.".to_owned(),
        ),
        table: Some(Table {
            columns: vec!["Ranks", "Severity", "Code", "Message"],
            numeric: vec![false, false, false, false],
            rows: found
                .into_iter()
                .map(|(d, ranks)| {
                    let mut message = d.message.clone();
                    if let Some(path) = &d.path {
                        message.push_str(&format!(" [module {}]", display_path(path)));
                    }
                    if let Some(operator) = &d.operator {
                        message.push_str(&format!(" [operator {operator}]"));
                    }
                    row(vec![
                        plain(ranks_text(&ranks)),
                        plain(d.severity.as_str()),
                        plain(serde_name(&d.code)),
                        plain(message),
                    ])
                })
                .collect(),
        }),
        ..Section::default()
    })
}

pub(super) fn distributed_page(page: &mut Page, report: &DistributedBenchmarkReport) {
    page.sections.push(job_section(report));
    page.sections.push(straggler_section(report));
    page.sections.push(blocks_section(report));
    page.sections.push(ranks_section(report));
    page.sections.extend(contexts_section(report));
    page.sections.extend(rank_diagnostics_section(report));
}
