//! Words: plurals, verdicts, percentages, rank lists, process groups, modes and serde names.

use serde::Serialize;

use crate::schema::analysis::AnalysisMode;
use crate::schema::common::ProcessGroupOrigin;
use crate::schema::comparison::Verdict;

use super::numbers::group_thousands;

/// `<count> <noun>`, with an `s` unless the count is 1: `1 layer`, `3 layers`.
pub fn plural(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// A verdict in words: `faster`, `no detectable change`, ... (the report's name has `_` where
/// this has spaces, see [`Verdict::as_str`]).
pub fn verdict_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoDetectableChange => "no detectable change",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Withheld => "withheld",
    }
}

/// A share as a percentage with one decimal: `23.8%`; `<0.1%` for a positive share that would
/// show as `0.0%`, `>99.9%` for one below 1 that would show as `100.0%`.
pub fn percent_text(ratio: f64) -> String {
    let percent = ratio * 100.0;
    if percent > 0.0 && percent < 0.05 {
        "<0.1%".to_owned()
    } else if (99.95..100.0).contains(&percent) {
        ">99.9%".to_owned()
    } else {
        format!("{}%", group_thousands(percent, 1))
    }
}

/// Ranks as people read them, consecutive ones as a range: `rank 1`, `ranks 0, 2`,
/// `ranks 0-3, 6`; `no rank` for none. The ranks are sorted and each counted once.
pub fn ranks_text(ranks: &[u64]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for rank in sorted.iter().copied() {
        match runs.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(rank) => *end = rank,
            _ => runs.push((rank, rank)),
        }
    }
    let text = runs
        .iter()
        .map(|&(start, end)| match end - start {
            0 => start.to_string(),
            1 => format!("{start}, {end}"),
            _ => format!("{start}-{end}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    match sorted.len() {
        0 => "no rank".to_owned(),
        1 => format!("rank {text}"),
        _ => format!("ranks {text}"),
    }
}

/// Whose process group aligned the ranks of a distributed job, in words.
pub fn process_group_words(origin: ProcessGroupOrigin) -> &'static str {
    match origin {
        ProcessGroupOrigin::Existing => "the caller's process group",
        ProcessGroupOrigin::Created => "a process group torchscan created (env://)",
    }
}

/// An analysis mode's name: `full` or `structure`.
pub fn mode_word(mode: AnalysisMode) -> &'static str {
    match mode {
        AnalysisMode::Full => "full",
        AnalysisMode::Structure => "structure",
    }
}

/// The name serde writes for a unit enum variant (`context_mismatch`, `failed`); empty when the
/// value does not serialize to a string.
pub fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
