//! What differs between the contexts of the two sides: the settings that may explain a delta, and
//! a change of precision.

use crate::format::{NOT_RECORDED, dtypes_or, recorded_json_text, recorded_text};
use crate::schema::common::Context;

pub(super) fn context_differences(baseline: &Context, candidate: &Context) -> Vec<String> {
    let mut differences = Vec::new();
    let mut note = |name: &str, left: String, right: String| {
        if left != right {
            differences.push(format!("{name} ({left} vs {right})"));
        }
    };
    note(
        "device",
        recorded_text(&baseline.device),
        recorded_text(&candidate.device),
    );
    note(
        "threads",
        recorded_text(&baseline.torch_threads),
        recorded_text(&candidate.torch_threads),
    );
    // A change of dtypes between two recorded lists is a change of precision, named apart.
    if baseline.dtypes.is_empty() || candidate.dtypes.is_empty() {
        note(
            "dtypes",
            dtypes_or(&baseline.dtypes, ",", NOT_RECORDED),
            dtypes_or(&candidate.dtypes, ",", NOT_RECORDED),
        );
    }
    note(
        "torch version",
        recorded_text(&baseline.torch_version),
        recorded_text(&candidate.torch_version),
    );
    // Each flag that differs, by its report name: the whole set would bury the one that matters.
    let left = serde_json::to_value(&baseline.flags).unwrap_or_default();
    let right = serde_json::to_value(&candidate.flags).unwrap_or_default();
    if let (Some(left), Some(right)) = (left.as_object(), right.as_object()) {
        for (name, value) in left {
            if name == "autocast" {
                continue; // part of the precision, named apart
            }
            let other = right.get(name).unwrap_or(&serde_json::Value::Null);
            note(
                &format!("flag {name}"),
                recorded_json_text(value),
                recorded_json_text(other),
            );
        }
    }
    differences
}

/// The change of precision between two benchmarks, when both recorded their dtypes or their
/// autocast regions and these differ: `float32 -> bfloat16` (the dtypes computed in, largest
/// FLOP share first). Never a refusal: the precision is often the change under test.
pub(super) fn precision_change(baseline: &Context, candidate: &Context) -> Option<String> {
    let mut parts = Vec::new();
    // The main precision is the first dtype of a context (the largest FLOP share, or the
    // output's without an operator FLOPs pass): a change of it changes what the deltas mean;
    // a change of the others only (one float64 scalar beside float32 work) is said as such.
    let mut main_changed = false;
    if !baseline.dtypes.is_empty()
        && !candidate.dtypes.is_empty()
        && baseline.dtypes != candidate.dtypes
    {
        let (before, after) = (
            crate::schema::common::dtypes_text(&baseline.dtypes, ", "),
            crate::schema::common::dtypes_text(&candidate.dtypes, ", "),
        );
        main_changed = baseline.dtypes.first() != candidate.dtypes.first();
        if main_changed {
            parts.push(format!(
                "precision changed: {before} -> {after} (context dtypes, main precision first)"
            ));
        } else {
            parts.push(format!(
                "dtypes changed: {before} -> {after}; the main precision stays {}",
                crate::schema::common::dtypes_text(&baseline.dtypes[..1], ", ")
            ));
        }
    }
    if baseline.flags.autocast.is_some()
        && candidate.flags.autocast.is_some()
        && baseline.flags.autocast != candidate.flags.autocast
    {
        main_changed = true;
        parts.push(format!(
            "autocast changed: {} -> {}",
            baseline.flags.autocast_text().unwrap_or_default(),
            candidate.flags.autocast_text().unwrap_or_default()
        ));
    }
    if parts.is_empty() {
        return None;
    }
    if !main_changed {
        return Some(parts.join("; "));
    }
    Some(format!(
        "{}; the deltas include this change of precision (compare outputs with check_outputs \
         and tolerances for the lower precision)",
        parts.join("; ")
    ))
}
