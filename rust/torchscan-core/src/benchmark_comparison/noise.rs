//! A noisy machine: the noise metrics of a side past their thresholds, the slowdown they can
//! explain, and the verdict of sides measured apart weighed against it.

use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{DiagnosticCode, MetricResult, MetricStatus};
use crate::schema::comparison::Verdict;

use super::interval::timed_span_s;

/// A report is noisy when other processes used more than this share of all CPU time while it
/// was timed (the threshold of its `noisy_machine` diagnostic).
pub const NOISY_OTHER_CPU_RATIO: f64 = 0.10;
/// A report is noisy when the hypervisor stole more than this share of all CPU time.
pub const NOISY_STEAL_RATIO: f64 = 0.02;
/// A report is noisy when its timing thread was preempted more often than this per second.
pub const NOISY_CONTEXT_SWITCHES_PER_S: f64 = 50.0;

/// The largest share of the machine that the noise allowance counts as taken by others: past
/// it, the allowance (a factor of 20) would forbid every verdict of change anyway.
pub const MAX_NOISE_SHARE: f64 = 0.95;

/// What competed with one side while it was timed, as a comparison weighs it.
pub(super) struct SideNoise {
    /// The noise metrics past their thresholds, as text.
    pub(super) passed: Vec<String>,
    /// The slowdown the noise can explain, as a factor: `1 / (1 - a)`, where `a` is other
    /// processes' share of all CPU time plus steal (at least [`NOISY_OTHER_CPU_RATIO`], at most
    /// [`MAX_NOISE_SHARE`]): the workload got at least `1 - a` of the machine it would have had.
    pub(super) allowance: f64,
}

fn complete_value(metric: Option<&MetricResult>) -> Option<f64> {
    metric
        .filter(|metric| metric.status == MetricStatus::Complete)
        .and_then(|metric| metric.value)
}

/// The side's noise when it passed a threshold or the report carries `noisy_machine`.
pub(super) fn side_noise(report: &BenchmarkReport) -> Option<SideNoise> {
    let metrics = &report.metrics;
    let other = complete_value(metrics.machine_other_cpu_ratio.as_ref());
    let steal = complete_value(metrics.cpu_steal_ratio.as_ref());
    let switches = complete_value(metrics.involuntary_context_switches.as_ref());
    let mut passed = Vec::new();
    if let Some(other) = other.filter(|other| *other > NOISY_OTHER_CPU_RATIO) {
        passed.push(format!(
            "machine_other_cpu_ratio {other:.3} > {NOISY_OTHER_CPU_RATIO:.2}"
        ));
    }
    if let Some(steal) = steal.filter(|steal| *steal > NOISY_STEAL_RATIO) {
        passed.push(format!(
            "cpu_steal_ratio {steal:.3} > {NOISY_STEAL_RATIO:.2}"
        ));
    }
    if let (Some(switches), Some(span)) = (switches, timed_span_s(report))
        && span > 0.0
        && switches / span > NOISY_CONTEXT_SWITCHES_PER_S
    {
        passed.push(format!(
            "involuntary_context_switches {switches:.0} in {span:.2} s ({:.0} per second > \
             {NOISY_CONTEXT_SWITCHES_PER_S:.0})",
            switches / span
        ));
    }
    let recorded = report
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.code == DiagnosticCode::NoisyMachine);
    if passed.is_empty() {
        if !recorded {
            return None;
        }
        passed.push("its noisy_machine diagnostic".to_owned());
    }
    let share =
        (other.unwrap_or(0.0) + steal.unwrap_or(0.0)).clamp(NOISY_OTHER_CPU_RATIO, MAX_NOISE_SHARE);
    let allowance = 1.0 / (1.0 - share);
    Some(SideNoise { passed, allowance })
}

/// The verdict of reports measured apart when a side was noisy: a change only where the whole
/// interval lies beyond what the noise can explain on top of the minimum effect, and never
/// `no_detectable_change`, since the noise can hide a change as well as fake one.
pub(super) fn noisy_verdict(
    low: f64,
    high: f64,
    min_effect: f64,
    allowance: f64,
    lower_is_better: bool,
) -> Verdict {
    let (better, worse) = if lower_is_better {
        (Verdict::Faster, Verdict::Slower)
    } else {
        (Verdict::Slower, Verdict::Faster)
    };
    if high < (1.0 - min_effect) / allowance {
        better
    } else if low > (1.0 + min_effect) * allowance {
        worse
    } else {
        Verdict::Inconclusive
    }
}
