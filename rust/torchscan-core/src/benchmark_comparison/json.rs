//! The JSON entry points: each side read and validated, as a single-process benchmark or a merged
//! distributed job, compared, and the comparison validated before it is returned.

use crate::schema::benchmark::BenchmarkReport;
use crate::schema::distributed::DistributedBenchmarkReport;

use super::compare::{compare_benchmarks_with, compare_distributed_with};
use super::{BenchCompareError, CompareOptions, Pairing};

/// A side of a JSON comparison: one process's benchmark, or a merged distributed job.
enum Timed {
    Single(Box<BenchmarkReport>),
    Job(Box<DistributedBenchmarkReport>),
}

impl Timed {
    fn kind(&self) -> &'static str {
        match self {
            Timed::Single(_) => crate::ReportKind::Benchmark.as_str(),
            Timed::Job(_) => crate::ReportKind::DistributedBenchmark.as_str(),
        }
    }
}

/// Why a JSON comparison produced no report.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchCompareFailure {
    /// An input is not a valid report of the expected kind; paths are prefixed by the side.
    Invalid(Vec<crate::Problem>),
    /// The reports cannot be compared.
    Refused(BenchCompareError),
    /// The comparison produced an invalid report: a bug, reported rather than returned.
    Internal(Vec<crate::Problem>),
}

fn read_side<T>(
    side: &str,
    text: &str,
    pick: impl Fn(crate::Report) -> Option<T>,
    kind: &str,
) -> Result<T, BenchCompareFailure> {
    let prefix = |problems: Vec<crate::Problem>| {
        problems
            .iter()
            .map(|problem| problem.on_side(side))
            .collect::<Vec<_>>()
    };
    let report = crate::read_report(text)
        .map_err(|problems| BenchCompareFailure::Invalid(prefix(problems)))?;
    let found = report.kind().as_str();
    pick(report).ok_or_else(|| {
        BenchCompareFailure::Invalid(vec![crate::Problem::new(
            format!("{side}:$.kind"),
            format!("expected a `{kind}` report, found `{found}`"),
        )])
    })
}

/// Reads, validates and compares benchmark reports given as JSON text; returns pretty JSON.
/// Both sides are `benchmark` reports, or both `distributed_benchmark` reports (compared by
/// [`compare_distributed_with`]); a mix is refused ([`BenchCompareError::DifferentKinds`]).
pub fn compare_benchmarks_json(
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    options: &CompareOptions,
) -> Result<String, BenchCompareFailure> {
    compare_benchmarks_json_with(baseline, candidate, check, options, Pairing::Independent)
}

/// [`compare_benchmarks_json`] with the timed blocks paired as `pairing` says.
pub fn compare_benchmarks_json_with(
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    options: &CompareOptions,
    pairing: Pairing,
) -> Result<String, BenchCompareFailure> {
    let benchmark = |report: crate::Report| match report {
        crate::Report::Benchmark(inner) => Some(Timed::Single(inner)),
        crate::Report::DistributedBenchmark(inner) => Some(Timed::Job(inner)),
        _ => None,
    };
    let baseline = read_side("baseline", baseline, benchmark, "benchmark")?;
    let candidate = read_side("candidate", candidate, benchmark, "benchmark")?;
    let check = match check {
        None => None,
        Some(text) => Some(read_side(
            "check",
            text,
            |report| match report {
                crate::Report::OutputCheck(inner) => Some(*inner),
                _ => None,
            },
            "output_check",
        )?),
    };
    let report = match (&baseline, &candidate) {
        (Timed::Single(baseline), Timed::Single(candidate)) => {
            compare_benchmarks_with(baseline, candidate, check.as_ref(), options, pairing)
        }
        (Timed::Job(baseline), Timed::Job(candidate)) => {
            compare_distributed_with(baseline, candidate, check.as_ref(), options, pairing)
        }
        _ => Err(BenchCompareError::DifferentKinds {
            baseline: baseline.kind().to_owned(),
            candidate: candidate.kind().to_owned(),
        }),
    }
    .map_err(BenchCompareFailure::Refused)?;
    let wrapped = crate::Report::BenchmarkComparison(Box::new(report));
    let problems = crate::validate::check_report(&wrapped);
    if !problems.is_empty() {
        return Err(BenchCompareFailure::Internal(problems));
    }
    Ok(crate::to_json_text(&wrapped))
}
