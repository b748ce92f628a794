//! The section of a benchmark page that compares it with the hardware: the achieved rates and
//! their utilization, every peak recorded with its provenance, and the roofline drawn in SVG
//! (no script): the compute ceiling and the bandwidth slope of the peak used, and the workload
//! at its arithmetic intensity and achieved rate.

use super::{Card, ChartText, Fact, Point, RooflineChart, Section, card, fact, number_fact};

use crate::format::{coordinate, float_count_text, known_text, percent_text, readable_number};
use crate::roofline::{Bound, KnownNumber, Roofline, roofline};
use crate::schema::benchmark::{BenchmarkReport, PeakOrigin};
use crate::schema::common::MetricResult;

const WIDTH: u32 = 640;
const HEIGHT: u32 = 290;
const PLOT_LEFT: f64 = 86.0;
const PLOT_RIGHT: f64 = 630.0;
const PLOT_TOP: f64 = 16.0;
const PLOT_BOTTOM: f64 = 250.0;

/// `10^floor(log10(value))`: the decade at or below a positive value.
fn decade_below(value: f64) -> f64 {
    10f64.powf(value.log10().floor())
}

/// `10^(floor(log10(value)) + 1)`: the decade strictly above a positive value.
fn decade_above(value: f64) -> f64 {
    10f64.powf(value.log10().floor() + 1.0)
}

fn origin_text(origin: Option<PeakOrigin>) -> &'static str {
    match origin {
        Some(PeakOrigin::Declared) => "declared",
        Some(PeakOrigin::Measured) => "measured",
        None => "none",
    }
}

/// Log-log axes over a plot area.
struct Axes {
    x_low: f64,
    x_high: f64,
    y_low: f64,
    y_high: f64,
}

impl Axes {
    fn x(&self, value: f64) -> f64 {
        let share =
            (value.log10() - self.x_low.log10()) / (self.x_high.log10() - self.x_low.log10());
        PLOT_LEFT + share.clamp(0.0, 1.0) * (PLOT_RIGHT - PLOT_LEFT)
    }

    fn y(&self, value: f64) -> f64 {
        let share =
            (value.log10() - self.y_low.log10()) / (self.y_high.log10() - self.y_low.log10());
        PLOT_BOTTOM - share.clamp(0.0, 1.0) * (PLOT_BOTTOM - PLOT_TOP)
    }
}

fn text(x: f64, y: f64, anchor: &'static str, words: String, title: Option<String>) -> ChartText {
    ChartText {
        x: coordinate(x),
        y: coordinate(y),
        anchor,
        rotate: None,
        text: words,
        title,
    }
}

/// A label along the bandwidth slope from `start` to `end` (SVG units), centred just above it
/// and turned to its angle.
fn slope_label(
    start: (f64, f64),
    end: (f64, f64),
    words: String,
    title: Option<String>,
) -> ChartText {
    let (dx, dy) = (end.0 - start.0, end.1 - start.1);
    let angle = dy.atan2(dx).to_degrees();
    let length = dx.hypot(dy).max(1.0);
    // Five units off the line, on its upper side (the normal that points up).
    let (x, y) = (
        (start.0 + end.0) / 2.0 + 5.0 * dy / length,
        (start.1 + end.1) / 2.0 - 5.0 * dx / length,
    );
    ChartText {
        rotate: Some(format!("{angle:.1}")),
        ..text(x, y, "middle", words, title)
    }
}

/// About how wide a label is, in SVG units (11 px text).
fn label_width(words: &str) -> f64 {
    words.chars().count() as f64 * 6.2
}

/// The roofline chart of `roof`.
fn roofline_chart(roof: &Roofline) -> RooflineChart {
    let intensity = roof.intensity.map(|known| known.value).filter(|v| *v > 0.0);
    let achieved = roof.achieved.map(|known| known.value).filter(|v| *v > 0.0);
    let (mut x_min, mut x_max) = (roof.ridge_point, roof.ridge_point);
    if let Some(intensity) = intensity {
        x_min = x_min.min(intensity);
        x_max = x_max.max(intensity);
    }
    let x_low = decade_below(x_min) / 10.0;
    let x_high = decade_above(x_max) * 10.0;
    let slope_start = roof.peak_bandwidth * x_low;
    let mut y_top = roof.peak_flop_rate;
    let mut y_bottom = slope_start;
    if let Some(achieved) = achieved {
        y_top = y_top.max(achieved);
        y_bottom = y_bottom.min(achieved);
    }
    let axes = Axes {
        x_low,
        x_high,
        y_low: decade_below(y_bottom),
        y_high: decade_above(y_top),
    };
    let (ridge_x, ceiling_y) = (axes.x(roof.ridge_point), axes.y(roof.peak_flop_rate));
    let roof_path = format!(
        "M{} {} L{} {} L{} {}",
        coordinate(PLOT_LEFT),
        coordinate(axes.y(slope_start)),
        coordinate(ridge_x),
        coordinate(ceiling_y),
        coordinate(PLOT_RIGHT),
        coordinate(ceiling_y)
    );
    let ridge = format!(
        "M{} {} L{} {}",
        coordinate(ridge_x),
        coordinate(ceiling_y),
        coordinate(ridge_x),
        coordinate(PLOT_BOTTOM)
    );
    let exact = |value: f64, unit: &str| Some(crate::format::exact_number(value, unit));
    let mut labels = vec![
        text(
            PLOT_RIGHT - 4.0,
            ceiling_y - 6.0,
            "end",
            format!(
                "compute ceiling {} ({})",
                readable_number(roof.peak_flop_rate, "FLOP/s"),
                origin_text(roof.flop_rate_origin)
            ),
            exact(roof.peak_flop_rate, "FLOP/s"),
        ),
        slope_label(
            (PLOT_LEFT, axes.y(slope_start)),
            (ridge_x, ceiling_y),
            format!(
                "bandwidth slope {} ({})",
                readable_number(roof.peak_bandwidth, "B/s"),
                origin_text(roof.bandwidth_origin)
            ),
            exact(roof.peak_bandwidth, "B/s"),
        ),
        text(
            ridge_x,
            PLOT_BOTTOM - 4.0,
            if ridge_x > (PLOT_LEFT + PLOT_RIGHT) / 2.0 {
                "end"
            } else {
                "start"
            },
            format!(" ridge {} ", readable_number(roof.ridge_point, "FLOP/B")),
            exact(roof.ridge_point, "FLOP/B"),
        ),
        // The axes: their ends and what they measure.
        text(
            PLOT_LEFT,
            PLOT_BOTTOM + 14.0,
            "start",
            readable_number(axes.x_low, "FLOP/B"),
            None,
        ),
        text(
            PLOT_RIGHT,
            PLOT_BOTTOM + 14.0,
            "end",
            readable_number(axes.x_high, "FLOP/B"),
            None,
        ),
        text(
            (PLOT_LEFT + PLOT_RIGHT) / 2.0,
            PLOT_BOTTOM + 30.0,
            "middle",
            "arithmetic intensity (FLOP/B, log scale)".to_owned(),
            None,
        ),
        text(
            PLOT_LEFT - 4.0,
            PLOT_TOP + 8.0,
            "end",
            readable_number(axes.y_high, "FLOP/s"),
            None,
        ),
        text(
            PLOT_LEFT - 4.0,
            PLOT_BOTTOM,
            "end",
            readable_number(axes.y_low, "FLOP/s"),
            None,
        ),
        text(
            PLOT_LEFT - 4.0,
            (PLOT_TOP + PLOT_BOTTOM) / 2.0,
            "end",
            "FLOP/s (log)".to_owned(),
            None,
        ),
    ];
    let mut point = None;
    let mut achieved_line = None;
    match (roof.intensity, roof.achieved, intensity, achieved) {
        (Some(at), Some(rate), Some(x), Some(y)) => {
            let (px, py) = (axes.x(x), axes.y(y));
            point = Some(Point {
                x: coordinate(px),
                y: coordinate(py),
                clipped: at.lower_bound || rate.lower_bound,
            });
            // The numbers are in the caption and the label's title; the label stays short.
            let words = "workload".to_owned();
            let fits_right = px + 8.0 + label_width(&words) <= PLOT_RIGHT;
            labels.push(text(
                if fits_right { px + 8.0 } else { px - 8.0 },
                py + 16.0,
                if fits_right { "start" } else { "end" },
                words,
                Some(format!(
                    "{}, {}",
                    known_text(at, "FLOP/B"),
                    known_text(rate, "FLOP/s")
                )),
            ));
        }
        (_, Some(rate), _, Some(y)) => {
            let py = axes.y(y);
            achieved_line = Some(format!(
                "M{} {} L{} {}",
                coordinate(PLOT_LEFT),
                coordinate(py),
                coordinate(PLOT_RIGHT),
                coordinate(py)
            ));
            labels.push(text(
                PLOT_RIGHT - 4.0,
                py + 14.0,
                "end",
                format!(
                    "achieved {} (arithmetic intensity unknown: not placed)",
                    known_text(rate, "FLOP/s")
                ),
                None,
            ));
        }
        _ => {}
    }
    RooflineChart {
        width: WIDTH,
        height: HEIGHT,
        frame: [
            coordinate(PLOT_LEFT),
            coordinate(PLOT_TOP),
            coordinate(PLOT_RIGHT - PLOT_LEFT),
            coordinate(PLOT_BOTTOM - PLOT_TOP),
        ],
        roof: roof_path,
        ridge,
        point,
        achieved_line,
        labels,
        caption: roofline_caption(roof),
    }
}

/// The share of the roof at the workload's intensity that its achieved rate reaches, as a
/// percentage, or why there is none: with no FLOPs counted the roof there is 0 (0 FLOP/B on the
/// bandwidth slope) and a share of it means nothing; a share beyond the range of a float is not
/// a number either.
fn share_of_roof(
    intensity: KnownNumber,
    achieved: KnownNumber,
    roof_there: f64,
) -> Result<String, String> {
    if intensity.value == 0.0 {
        return Err("no FLOPs were counted (operator FLOPs are 0)".into());
    }
    if roof_there <= 0.0 {
        return Err(format!(
            "the roof there is {}",
            readable_number(roof_there, "FLOP/s")
        ));
    }
    let percent = achieved.value / roof_there * 100.0;
    if percent.is_finite() {
        Ok(percent_text(achieved.value / roof_there))
    } else {
        Err("the achieved rate over the roof there is beyond the range of a float".into())
    }
}

/// The roofline in words: the roofs, where the workload sits and which roof binds it.
fn roofline_caption(roof: &Roofline) -> String {
    let mut caption = format!(
        "Roofline of the peak used: compute ceiling {} ({}), bandwidth slope {} ({}), ridge point \
         {}.",
        readable_number(roof.peak_flop_rate, "FLOP/s"),
        origin_text(roof.flop_rate_origin),
        readable_number(roof.peak_bandwidth, "B/s"),
        origin_text(roof.bandwidth_origin),
        readable_number(roof.ridge_point, "FLOP/B"),
    );
    match (roof.intensity, roof.achieved) {
        (Some(intensity), Some(achieved)) => {
            let roof_there = roof.attainable(intensity.value);
            caption.push_str(&format!(
                " The workload, at {} and {}, is {}",
                known_text(intensity, "FLOP/B"),
                known_text(achieved, "FLOP/s"),
                roof.bound.words()
            ));
            match roof.bound {
                Bound::Compute | Bound::Memory => {
                    caption.push_str(&format!(
                        ": its roof there is {}",
                        readable_number(roof_there, "FLOP/s")
                    ));
                    match share_of_roof(intensity, achieved, roof_there) {
                        Ok(share) => caption.push_str(&format!(
                            ", of which it reaches {}{share}.",
                            if achieved.lower_bound {
                                "at least "
                            } else {
                                ""
                            }
                        )),
                        Err(why) => caption
                            .push_str(&format!("; the share of it reached is unavailable: {why}.")),
                    }
                }
                Bound::Unknown(_) => caption.push('.'),
            }
            if achieved.value > roof_there && !intensity.lower_bound {
                caption.push_str(
                    " It is above the roof there: the peak it is compared with is below what it \
                     reaches, or operator bytes overcount its memory traffic (caches and fused \
                     kernels keep data on chip).",
                );
            }
            if intensity.lower_bound || achieved.lower_bound {
                caption.push_str(
                    " Drawn hollow: a lower bound (some operators are uncounted), so the true \
                     point lies further right or higher.",
                );
            }
        }
        (None, achieved) => {
            caption.push_str(&format!(
                " The workload is not placed: its arithmetic intensity is {}; which roof binds it \
                 is unknown.",
                roof.intensity_missing.as_deref().unwrap_or("unknown")
            ));
            if let Some(achieved) = achieved {
                caption.push_str(&format!(
                    " Its achieved rate, {}, is drawn as a dashed line.",
                    known_text(achieved, "FLOP/s")
                ));
            }
        }
        (Some(_), None) => caption.push_str(
            " The workload is not placed: its achieved FLOP rate is unavailable (it needs the \
             latency and operator_flops passes).",
        ),
    }
    caption
}

fn optional_card(cards: &mut Vec<Card>, label: &str, metric: Option<&MetricResult>) {
    if let Some(metric) = metric {
        cards.push(card(label, metric));
    }
}

/// The cards of the rate metrics a benchmark carries, in reading order.
fn rate_cards(report: &BenchmarkReport) -> Vec<Card> {
    let m = &report.metrics;
    let mut cards = Vec::new();
    optional_card(
        &mut cards,
        "Achieved FLOP rate",
        m.achieved_flop_rate.as_ref(),
    );
    optional_card(&mut cards, "FLOP utilization", m.flop_utilization.as_ref());
    optional_card(&mut cards, "Operator bytes", m.operator_bytes.as_ref());
    optional_card(
        &mut cards,
        "Arithmetic intensity",
        m.arithmetic_intensity.as_ref(),
    );
    optional_card(
        &mut cards,
        "Bandwidth utilization",
        m.bandwidth_utilization.as_ref(),
    );
    cards
}

/// The section of a benchmark's rates against the hardware: with a recorded peak, the peaks and
/// the roofline; without one, the rates it carries and how to get a peak. `None` for a report
/// that carries neither (written before they were recorded).
pub(super) fn hardware_section(report: &BenchmarkReport) -> Option<Section> {
    let mut cards = rate_cards(report);
    let Some(peak) = report.hardware_peak.as_ref() else {
        return (!cards.is_empty()).then(|| Section {
            title: "Achieved rates".to_owned(),
            note: Some(
                "No peak is recorded: measure one with metrics=[..., \"hardware_peak\"] or \
                 declare one with peak={\"flop_rate\": ..., \"bandwidth\": ..., \"source\": \
                 ...} to see the utilization and the roofline."
                    .to_owned(),
            ),
            cards,
            ..Section::default()
        });
    };
    cards.push(card("Peak FLOP rate used", &peak.flop_rate));
    cards.push(card("Peak bandwidth used", &peak.bandwidth));
    let mut facts: Vec<Fact> = vec![
        fact(
            "Peak FLOP rate from",
            origin_text(peak.flop_rate_origin).to_owned(),
        ),
        fact(
            "Peak bandwidth from",
            origin_text(peak.bandwidth_origin).to_owned(),
        ),
    ];
    if let Some(declared) = &peak.declared {
        facts.push(fact("Declared source", declared.source.clone()));
        cards.push(card("Declared FLOP rate", &declared.flop_rate));
        cards.push(card("Declared bandwidth", &declared.bandwidth));
    }
    if let Some(measured) = &peak.measured {
        facts.push(fact("Measured dtype", measured.dtype.clone()));
        facts.push(fact(
            "Matmul",
            format!(
                "{} x {} by {} x {}",
                float_count_text(measured.matmul_size),
                float_count_text(measured.matmul_size),
                float_count_text(measured.matmul_size),
                float_count_text(measured.matmul_size)
            ),
        ));
        facts.push(number_fact("Copy", measured.copy_bytes as f64, "B"));
        cards.push(card("Measured FLOP rate", &measured.flop_rate));
        cards.push(card("Measured bandwidth", &measured.bandwidth));
        cards.push(card(
            "Theoretical FLOP rate",
            &measured.theoretical_flop_rate,
        ));
        cards.push(card(
            "Theoretical bandwidth",
            &measured.theoretical_bandwidth,
        ));
    }
    let mut note = "Utilization divides by a declared peak where there is one, else by the \
                    measured one; a theoretical peak is never attained. Operator bytes model \
                    traffic with no cache reuse between operators: they are not DRAM traffic."
        .to_owned();
    let chart = match roofline(report) {
        Some(Ok(roof)) => {
            facts.push(fact("Bound", roof.bound.words()));
            Some(roofline_chart(&roof))
        }
        Some(Err(why)) => {
            note.push_str(&format!(" No roofline: {why}."));
            None
        }
        None => None,
    };
    Some(Section {
        title: "Hardware peak and roofline".to_owned(),
        note: Some(note),
        facts,
        cards,
        roofline: chart,
        ..Section::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(value: f64) -> Option<KnownNumber> {
        Some(KnownNumber {
            value,
            lower_bound: false,
        })
    }

    /// A roofline of 1 TFLOP/s and 100 GB/s, both declared, with the workload at `intensity`
    /// and `achieved`.
    fn declared_roof(intensity: f64, achieved: f64, bandwidth: f64) -> Roofline {
        let ridge_point = 1.0e12 / bandwidth;
        Roofline {
            peak_flop_rate: 1.0e12,
            flop_rate_origin: Some(PeakOrigin::Declared),
            peak_bandwidth: bandwidth,
            bandwidth_origin: Some(PeakOrigin::Declared),
            ridge_point,
            intensity: whole(intensity),
            intensity_missing: None,
            achieved: whole(achieved),
            bound: crate::roofline::bound(whole(intensity), ridge_point, None),
        }
    }

    #[test]
    fn a_workload_without_flops_has_no_share_of_its_roof() {
        // 0 FLOP/B puts the roof there at 0 FLOP/s: 0 / 0 once printed `NaN%`.
        let caption = roofline_caption(&declared_roof(0.0, 0.0, 1.0e11));
        assert_eq!(
            caption,
            "Roofline of the peak used: compute ceiling 1.000 TFLOP/s (declared), bandwidth slope \
             100.0 GB/s (declared), ridge point 10 FLOP/B. The workload, at 0 FLOP/B and 0 \
             FLOP/s, is memory-bound: its roof there is 0 FLOP/s; the share of it reached is \
             unavailable: no FLOPs were counted (operator FLOPs are 0)."
        );
        let chart = roofline_chart(&declared_roof(0.0, 0.0, 1.0e11));
        assert!(chart.point.is_none());
        for label in &chart.labels {
            assert!(!label.text.contains("NaN") && !label.text.contains("inf"));
        }
    }

    #[test]
    fn a_share_beyond_the_float_range_is_unavailable() {
        // A roof of 1e-320 FLOP/s there (subnormal) under an achieved 1 GFLOP/s: the ridge point
        // (1e212 FLOP/B) is a float, the share (1e329) is not.
        let roof = declared_roof(1.0e-120, 1.0e9, 1.0e-200);
        assert!(roof.ridge_point.is_finite());
        let caption = roofline_caption(&roof);
        assert!(
            !caption.contains("inf") && !caption.contains("NaN"),
            "{caption}"
        );
        assert!(
            caption.ends_with(
                "the share of it reached is unavailable: the achieved rate over the roof there \
                 is beyond the range of a float. It is above the roof there: the peak it is \
                 compared with is below what it reaches, or operator bytes overcount its memory \
                 traffic (caches and fused kernels keep data on chip)."
            ),
            "{caption}"
        );
        // A workload on its roof reaches 100%.
        let caption = roofline_caption(&declared_roof(2.0, 2.0e11, 1.0e11));
        assert!(
            caption.ends_with("its roof there is 200.0 GFLOP/s, of which it reaches 100.0%."),
            "{caption}"
        );
    }

    #[test]
    fn decades_bracket_a_value() {
        assert_eq!(decade_below(36.57), 10.0);
        assert_eq!(decade_above(36.57), 100.0);
        // A power of ten gets the decade above it, so a roof never sits on the frame's edge.
        assert_eq!(decade_above(100.0), 1000.0);
        assert_eq!(decade_below(100.0), 100.0);
    }
}
