//! A benchmark report refitted to other timed blocks, for the tests of reports at the ends of
//! the float range; shared by `torchscan-core`'s and `torchscan-report`'s tests (each includes
//! this file with `#[path]`).

use serde_json::Value;
use torchscan_core::stats::block_timing;

/// `report` (a benchmark report) with these block durations, calls per block and work units
/// per call, its latency, IQR and throughput recomputed; the optional members the new blocks
/// would contradict (the blocks' starts, and the rates that divide by the latency) are removed.
/// `None` when no valid report has them (a statistic past the float range).
pub fn with_blocks(
    mut report: Value,
    blocks: &[f64],
    calls: u64,
    work_units: f64,
) -> Option<Value> {
    let timing = block_timing(blocks, calls).ok()?;
    if let Some(timing) = report["timing"].as_object_mut() {
        timing.remove("block_starts_s");
    }
    if let Some(metrics) = report["metrics"].as_object_mut() {
        for key in [
            "achieved_flop_rate",
            "flop_utilization",
            "bandwidth_utilization",
        ] {
            metrics.remove(key);
        }
    }
    report["timing"]["block_durations_s"] = serde_json::json!(blocks);
    report["timing"]["calls_per_block"] = serde_json::json!(calls);
    report["workload"]["work_units"] = serde_json::json!(work_units);
    for (key, value) in [
        ("latency", timing.latency_s),
        ("latency_iqr", timing.latency_iqr_s),
        ("throughput", timing.throughput(work_units)),
    ] {
        if !value.is_finite() {
            return None;
        }
        report["metrics"][key]["value"] = serde_json::json!(value);
        report["metrics"][key]["known_value"] = serde_json::json!(value);
    }
    Some(report)
}
