//! The straggler of the aligned blocks: the rank slowest in more blocks than chance allows (a
//! one-sided sign test), named when its cost is a visible share of the step time.

use crate::schema::distributed::{JobBlock, Straggler};
use crate::stats;

use super::error::{MergeError, stats_error};

/// The sign test's level: a rank is the straggler only when chance would make it the slowest
/// that often with a probability below this.
pub const STRAGGLER_SIGNIFICANCE: f64 = 0.01;

/// The smallest cost, as a share of the step time, for which a straggler is named: below it the
/// ranks keep the same pace for every practical purpose.
pub const STRAGGLER_MIN_SHARE: f64 = 0.01;

/// [`STRAGGLER_MIN_SHARE`] in percent, for sentences.
const STRAGGLER_MIN_SHARE_PERCENT: f64 = 1.0;

/// The probability that a binomial count with `trials` trials and success probability `p`
/// reaches `successes` or more: the one-sided sign test of a rank being the slowest in
/// `successes` of `trials` blocks when every rank is equally likely to be. Summed in log space,
/// so that thousands of blocks neither underflow nor overflow.
pub fn sign_test_p_value(trials: u64, successes: u64, p: f64) -> f64 {
    if successes == 0 {
        return 1.0;
    }
    if successes > trials || !(p > 0.0 && p < 1.0) {
        return 0.0;
    }
    let n = trials as f64;
    let (log_p, log_q) = (p.ln(), (1.0 - p).ln());
    // log C(n, k) by the recurrence C(n, k + 1) = C(n, k) (n - k) / (k + 1).
    let mut log_choose = 0.0;
    let mut terms = Vec::with_capacity((trials - successes + 1) as usize);
    for k in 0..=trials {
        if k >= successes {
            terms.push(log_choose + k as f64 * log_p + (n - k as f64) * log_q);
        }
        if k < trials {
            log_choose += (n - k as f64).ln() - (k as f64 + 1.0).ln();
        }
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|term| (term - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

/// The straggler of the aligned blocks `durations[rank][block]`.
pub(super) fn find_straggler(
    durations: &[&[f64]],
    blocks: &[JobBlock],
    calls_per_block: u64,
    step_time_s: f64,
) -> Result<Straggler, MergeError> {
    let world_size = durations.len();
    let count = blocks.len();
    let mut slowest_blocks = vec![0u64; world_size];
    for block in blocks {
        if let Some(slot) = slowest_blocks.get_mut(block.slowest_rank as usize) {
            *slot += 1;
        }
    }
    let (most_rank, most) =
        slowest_blocks
            .iter()
            .enumerate()
            .fold((0usize, 0u64), |best, (rank, blocks)| {
                if *blocks > best.1 {
                    (rank, *blocks)
                } else {
                    best
                }
            });
    let method = format!(
        "the straggler is the rank whose block ended last (the slowest) in more than half of \
         the aligned blocks, more often than chance allows (a one-sided sign test against \
         1 / world size, p below {STRAGGLER_SIGNIFICANCE}), and whose cost is at least \
         {STRAGGLER_MIN_SHARE_PERCENT}% of the step time; its cost is what the job would save \
         per call if it kept the other ranks' median pace: the median over blocks of its block \
         duration minus the median of the other ranks' durations of that block, per call, and \
         at least 0. Waits inside the workload's own collectives are not seen: a rank slowed \
         before a collective in the call delays every rank to that point and shows as every \
         rank's step time"
    );
    let unnamed = |reason: String| Straggler {
        rank: None,
        slowest_blocks: slowest_blocks.clone(),
        cost_s: None,
        cost_ratio: None,
        method: method.clone(),
        reason: Some(reason),
    };
    if world_size < 2 {
        return Ok(unnamed(
            "only one rank: no rank waited for another".to_owned(),
        ));
    }
    if most.saturating_mul(2) <= count as u64 {
        return Ok(unnamed(format!(
            "no rank was the slowest in more than half of the {count} blocks (most: rank \
             {most_rank}, in {most})"
        )));
    }
    let calls = calls_per_block as f64;
    let mut excess = Vec::with_capacity(count);
    for block in 0..count {
        let others: Vec<f64> = durations
            .iter()
            .enumerate()
            .filter(|(rank, _)| *rank != most_rank)
            .map(|(_, ranks)| ranks[block])
            .collect();
        let pace = stats::median(&others).map_err(stats_error)?;
        excess.push((durations[most_rank][block] - pace) / calls);
    }
    let cost_s = stats::median(&excess).map_err(stats_error)?.max(0.0);
    let share = if step_time_s > 0.0 {
        cost_s / step_time_s
    } else {
        0.0
    };
    let chance = sign_test_p_value(count as u64, most, 1.0 / world_size as f64);
    if chance >= STRAGGLER_SIGNIFICANCE {
        return Ok(unnamed(format!(
            "rank {most_rank} was the slowest in {most} of the {count} blocks, which chance \
             explains (sign test p = {chance:.3}, not below {STRAGGLER_SIGNIFICANCE}): no rank \
             stands out"
        )));
    }
    if share < STRAGGLER_MIN_SHARE {
        return Ok(unnamed(format!(
            "rank {most_rank} was the slowest in {most} of the {count} blocks, but by only {} \
             per call ({:.2}% of the step time, below the {STRAGGLER_MIN_SHARE_PERCENT}% a \
             straggler must cost to be named)",
            crate::format::readable_number(cost_s, "s"),
            share * 100.0
        )));
    }
    Ok(Straggler {
        rank: Some(most_rank as u64),
        slowest_blocks: slowest_blocks.clone(),
        cost_s: Some(cost_s),
        cost_ratio: Some(share),
        method,
        reason: None,
    })
}

#[cfg(test)]
mod sign_test {
    use super::sign_test_p_value;

    #[test]
    fn small_cases_match_the_binomial_sums() {
        // P(X >= 2 | n = 2, p = 1/2) = 1/4; P(X >= 3 | n = 4, p = 1/2) = 5/16.
        assert!((sign_test_p_value(2, 2, 0.5) - 0.25).abs() < 1e-12);
        assert!((sign_test_p_value(4, 3, 0.5) - 5.0 / 16.0).abs() < 1e-12);
        // Three ranks: P(X >= 2 | n = 2, p = 1/3) = 1/9.
        assert!((sign_test_p_value(2, 2, 1.0 / 3.0) - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(sign_test_p_value(10, 0, 0.5), 1.0);
    }

    #[test]
    fn many_blocks_neither_underflow_nor_overflow() {
        // 5,000 of 10,000 blocks is chance; all 10,000 is not (0.5^10000 underflows as a
        // plain product, and is 0 here).
        let even = sign_test_p_value(10_000, 5_000, 0.5);
        assert!(even > 0.49 && even < 0.51, "{even}");
        assert_eq!(sign_test_p_value(10_000, 10_000, 0.5), 0.0);
        // 68 of 104 blocks for two ranks: a one-sided p of about 0.001.
        let skewed = sign_test_p_value(104, 68, 0.5);
        assert!(skewed > 0.0005 && skewed < 0.002, "{skewed}");
    }
}
