//! Tests of the formatting rules.

use crate::schema::analysis::AnalysisMode;
use crate::schema::common::{
    MetricResult, MetricStatus, ProcessGroupOrigin, TensorMeta, ValueMeta,
};
use crate::schema::comparison::Verdict;

use super::NOT_RECORDED;
use super::metrics::{
    format_metric, metric_text_in_unit, noise_label, nonblank_reason_suffix, page_metric_cell,
    readable_metric, readable_metric_text, reason_suffix, status_metric_cell, table_metric_cell,
};
use super::numbers::{
    count_text, display_number, exact_number, float_count_text, group_thousands, number_text,
    readable_change, readable_number, readable_pair, readable_with_exact,
};
use super::values::{
    display_output_path, display_path, dtypes_or, or_unknown, recorded_json_text, recorded_text,
    shape_text, threads_text, value_text,
};
use super::words::{
    mode_word, percent_text, plural, process_group_words, ranks_text, serde_name, verdict_words,
};

use crate::schema::common::{EmptyMeta, SequenceMeta, TypeOnlyMeta};

#[test]
fn thousands_and_decimals() {
    assert_eq!(group_thousands(4_191_866.3, 3), "4,191,866.300");
    assert_eq!(group_thousands(1_048_576.0, 3), "1,048,576.000");
    assert_eq!(group_thousands(0.094, 3), "0.094");
    assert_eq!(group_thousands(999.0, 0), "999");
    assert_eq!(group_thousands(1000.0, 0), "1,000");
    assert_eq!(group_thousands(0.0, 0), "0");
    assert_eq!(group_thousands(0.0, 3), "0.000");
    assert_eq!(group_thousands(-0.0, 3), "0.000");
    assert_eq!(group_thousands(-1234.5, 1), "-1,234.5");
    assert_eq!(group_thousands(-999_999.0, 0), "-999,999");
    assert_eq!(group_thousands(-0.0001, 3), "0.000");
    // From 1e21 the shortest scientific notation: never the 309 digits of f64::MAX.
    assert_eq!(group_thousands(9.99e20, 0), "999,000,000,000,000,000,000");
    assert_eq!(group_thousands(1e21, 3), "1e21");
    assert_eq!(group_thousands(1e308, 0), "1e308");
    assert_eq!(group_thousands(-f64::MAX, 1), "-1.7976931348623157e308");
    assert_eq!(group_thousands(f64::INFINITY, 1), "inf");
    assert_eq!(percent_text(1e300), "1e302%");
    assert_eq!(group_thousands(f64::NAN, 3), "NaN");
    assert_eq!(group_thousands(f64::INFINITY, 3), "inf");
    // The sign is kept only before a nonzero digit, so negative infinity shows as `inf`.
    // Valid reports hold finite numbers; the rule is kept as it always was.
    assert_eq!(group_thousands(f64::NEG_INFINITY, 0), "inf");
}

#[test]
fn counts_exact_and_through_floats() {
    assert_eq!(count_text(0), "0");
    assert_eq!(count_text(999), "999");
    assert_eq!(count_text(1000), "1,000");
    assert_eq!(count_text(1_234_567), "1,234,567");
    assert_eq!(count_text(u64::MAX), "18,446,744,073,709,551,615");
    assert_eq!(float_count_text(1_234_567), "1,234,567");
    // The two differ above 2^53 only.
    let past = (1u64 << 53) + 1;
    assert_eq!(count_text(past), "9,007,199,254,740,993");
    assert_eq!(float_count_text(past), "9,007,199,254,740,992");
}

#[test]
fn numbers_and_units() {
    assert_eq!(number_text(388_800.0), "388,800");
    assert_eq!(number_text(0.5), "0.500");
    assert_eq!(number_text(-2.0), "-2");
    assert_eq!(number_text(0.0), "0");
    assert_eq!(number_text(1e15), "1,000,000,000,000,000.000");
    assert_eq!(number_text(f64::NAN), "NaN");
    assert_eq!(display_number(0.001_234_5, "s"), "1.234 ms");
    assert_eq!(display_number(-0.5, "s"), "-500.000 ms");
    assert_eq!(display_number(98_816.0, "B"), "0.094 MiB");
    assert_eq!(display_number(1_048_576.0, "B"), "1.000 MiB");
    assert_eq!(display_number(1234.0, "count"), "1,234");
    assert_eq!(display_number(0.25, "ratio"), "0.250");
    assert_eq!(display_number(2_400_000_000.0, "Hz"), "2,400 MHz");
    assert_eq!(display_number(1000.0, "FLOPs"), "1,000.000 FLOPs");
    assert_eq!(display_number(0.0, "samples/s"), "0.000 samples/s");
    assert_eq!(display_number(f64::INFINITY, "s"), "inf ms");
    // A nonzero value never prints as zero; zero stays as it was.
    assert_eq!(display_number(4.123e-7, "s"), "0.00041 ms");
    assert_eq!(display_number(1e-6, "s"), "0.001 ms");
    assert_eq!(display_number(-4.123e-7, "s"), "-0.00041 ms");
    assert_eq!(display_number(132.0, "B"), "0.00013 MiB");
    assert_eq!(display_number(0.0004, "ratio"), "0.00040");
    assert_eq!(display_number(0.4, "count"), "0.400");
    assert_eq!(display_number(1e-20, "ratio"), "1.0e-20");
    assert_eq!(display_number(0.0, "s"), "0.000 ms");
    assert_eq!(display_number(0.006_1, "s"), "6.100 ms");
    assert_eq!(display_number(1500.0, "Hz"), "0.002 MHz");
    assert_eq!(display_number(400.0, "Hz"), "0.00040 MHz");
}

#[test]
fn readable_numbers() {
    let r = readable_number;
    assert_eq!(r(11_981_440.0, "FLOPs"), "11.98 MFLOPs");
    assert_eq!(r(1_048_576.0, "FLOPs"), "1.049 MFLOPs");
    assert_eq!(r(999.0, "FLOPs"), "999 FLOPs");
    assert_eq!(r(999_960.0, "FLOPs"), "1.000 MFLOPs");
    assert_eq!(r(99_995.0, "count"), "100.0 k");
    assert_eq!(r(9_999.6, "FLOPs"), "10.00 kFLOPs");
    assert_eq!(r(102_395.0, "B"), "100.0 KiB");
    assert_eq!(r(1_024_000.0, "B"), "0.9766 MiB");
    assert_eq!(r(99.996e-6, "s"), "100.0 us");
    assert_eq!(r(1e30, "FLOPs"), "1,000,000,000,000 EFLOPs");
    // Past a thousand trillion of the largest prefix: scientific notation, never 309 digits.
    assert_eq!(r(1e33, "FLOPs"), "1.000e33 FLOPs");
    assert_eq!(r(1e308, "FLOP/s"), "1.000e308 FLOP/s");
    assert_eq!(r(-f64::MAX, "count"), "-1.798e308");
    assert_eq!(r(1e300, "samples/s"), "1.000e300 samples/s");
    assert_eq!(r(1e300, "B"), "1.000e300 B");
    assert_eq!(r(0.0, "FLOPs"), "0 FLOPs");
    assert_eq!(r(32.0, "samples"), "32 samples");
    assert_eq!(r(4_191_866.3, "samples/s"), "4.192 M samples/s");
    assert_eq!(r(12.345, "samples/s"), "12.35 samples/s");
    assert_eq!(r(0.000_5, "samples/s"), "0.000500 samples/s");
    assert_eq!(r(2970.0, "count"), "2.970 k");
    assert_eq!(r(11_689_512.0, "count"), "11.69 M");
    assert_eq!(r(2970.6, "count"), "2.971 k");
    assert_eq!(r(448.0, "count"), "448");
    assert_eq!(r(0.498, "ratio"), "0.498");
    assert_eq!(r(0.03, "ratio"), "0.030");
    assert_eq!(r(0.0, "ratio"), "0.000");
    assert_eq!(r(0.000_4, "ratio"), "0.000400");
    assert_eq!(r(1.5, "ratio"), "1.500");
    // Times: ns, us, ms, s.
    assert_eq!(r(4.123e-7, "s"), "412.3 ns");
    assert_eq!(r(1.9e-5, "s"), "19.00 us");
    assert_eq!(r(0.006_1, "s"), "6.100 ms");
    assert_eq!(r(0.999_96, "s"), "1.000 s");
    assert_eq!(r(9.999_6e-7, "s"), "1.000 us");
    assert_eq!(r(2.5, "s"), "2.500 s");
    assert_eq!(r(12_345.6, "s"), "12,346 s");
    assert_eq!(r(5e-12, "s"), "0.00500 ns");
    assert_eq!(r(0.0, "s"), "0 s");
    assert_eq!(r(-0.002, "s"), "-2.000 ms");
    // Bytes: B, KiB, MiB, GiB.
    assert_eq!(r(132.0, "B"), "132 B");
    assert_eq!(r(11_880.0, "B"), "11.60 KiB");
    assert_eq!(r(98_816.0, "B"), "96.50 KiB");
    assert_eq!(r(1_048_576.0, "B"), "1.000 MiB");
    assert_eq!(r(1_048_575.0, "B"), "1.000 MiB");
    assert_eq!(r(3.5 * 1_073_741_824.0, "B"), "3.500 GiB");
    assert_eq!(r(0.5, "B"), "0.500 B");
    assert_eq!(r(100.25, "B"), "100.2 B");
    assert_eq!(r(2_400_000_000.0, "Hz"), "2.400 GHz");
    assert_eq!(r(f64::NAN, "s"), "NaN s");
}

#[test]
fn exact_numbers_beside_readable_ones() {
    assert_eq!(exact_number(11_981_440.0, "FLOPs"), "11,981,440 FLOPs");
    assert_eq!(exact_number(4.123_45e-7, "s"), "0.000000412345 s");
    assert_eq!(exact_number(2970.0, "count"), "2,970");
    assert_eq!(exact_number(0.5, "ratio"), "0.5");
    assert_eq!(
        exact_number(5_217_020.699_982_093, "samples/s"),
        "5,217,020.699982093 samples/s"
    );
    assert_eq!(exact_number(-1.5, "s"), "-1.5 s");
    assert_eq!(exact_number(f64::INFINITY, "s"), "inf s");
    assert_eq!(exact_number(1e20, "FLOPs"), "100000000000000000000 FLOPs");
    assert_eq!(exact_number(1e30, "FLOP/s"), "1e30 FLOP/s");
    assert_eq!(exact_number(1.5e300, "ratio"), "1.5e300");
    assert_eq!(exact_number(-f64::MAX, "B"), "-1.7976931348623157e308 B");
    assert_eq!(
        readable_with_exact(11_981_440.0, "FLOPs"),
        "11.98 MFLOPs (11,981,440 FLOPs)"
    );
    assert_eq!(readable_with_exact(448.0, "count"), "448");
    assert_eq!(readable_with_exact(132.0, "B"), "132 B");
    assert_eq!(readable_with_exact(0.0, "FLOPs"), "0 FLOPs");
    assert_eq!(
        readable_change(1256.0, 2472.0, 1216.0, "B"),
        "1.227 KiB -> 2.414 KiB (+1.188 KiB; exact 1,256 B -> 2,472 B, +1,216 B)"
    );
    assert_eq!(
        readable_change(314.0, 618.0, 304.0, "count"),
        "314 -> 618 (+304)"
    );
    assert_eq!(readable_change(0.0, 0.0, 0.0, "B"), "0 B -> 0 B (+0 B)");
    assert_eq!(
        readable_change(2.0e-6, 1.0e-6, -1.0e-6, "s"),
        "2.000 us -> 1.000 us (-1.000 us; exact 0.000002 s -> 0.000001 s, -0.000001 s)"
    );
    assert_eq!(
        readable_pair(32.0, 64.0, "samples"),
        "32 samples -> 64 samples"
    );
    assert_eq!(
        readable_pair(1.5e-3, 2.0e-3, "s"),
        "1.500 ms -> 2.000 ms (exact 0.0015 s -> 0.002 s)"
    );
}

proptest::proptest! {
    /// No nonzero number prints as zero, in either form, in any unit.
    #[test]
    fn nonzero_never_prints_as_zero(
        value in proptest::prop_oneof![
            1e-300f64..1e-3,
            1e-3f64..1e3,
            1e3f64..1e300,
        ],
        negative: bool,
        unit in proptest::sample::select(
            vec!["s", "B", "count", "ratio", "Hz", "FLOPs", "samples/s", "tokens"],
        ),
    ) {
        let value = if negative { -value } else { value };
        for text in [readable_number(value, unit), display_number(value, unit)] {
            let digits = text.split(['e', ' ']).next().unwrap_or_default();
            proptest::prop_assert!(
                digits.bytes().any(|b| matches!(b, b'1'..=b'9')),
                "{} {} printed as {}", value, unit, text
            );
        }
    }
}

fn partial(known: f64, reason: Option<&str>) -> MetricResult {
    MetricResult {
        status: MetricStatus::Partial,
        value: None,
        known_value: Some(known),
        unit: "FLOPs".into(),
        scope: "s".into(),
        method: "m".into(),
        reason: reason.map(str::to_owned),
    }
}

#[test]
fn metric_text_by_status() {
    let complete = MetricResult::complete(98_816.0, "B", "PyTorch tracked CPU tensors", "m");
    assert_eq!(format_metric(&complete), "0.094 MiB");
    assert_eq!(metric_text_in_unit(&complete), "98,816 B");
    let unavailable = MetricResult::unavailable("B", "s", "m", "not requested");
    assert_eq!(format_metric(&unavailable), "unavailable (not requested)");
    assert_eq!(
        metric_text_in_unit(&unavailable),
        "unavailable (not requested)"
    );
    let partial_one = partial(1000.0, Some("1 uncounted operator"));
    assert_eq!(
        format_metric(&partial_one),
        "partial, at least 1,000.000 FLOPs (1 uncounted operator)"
    );
    assert_eq!(
        metric_text_in_unit(&partial_one),
        "partial, at least 1,000 FLOPs (1 uncounted operator)"
    );
    // A blank reason: shown by format_metric, left out by metric_text_in_unit.
    let blank = partial(0.5, Some(" "));
    assert_eq!(format_metric(&blank), "partial, at least 0.500 FLOPs ( )");
    assert_eq!(metric_text_in_unit(&blank), "partial, at least 0.500 FLOPs");
    assert_eq!(reason_suffix(None), "");
    assert_eq!(nonblank_reason_suffix(Some("")), "");
    assert_eq!(nonblank_reason_suffix(Some("why")), " (why)");
}

#[test]
fn status_metric_cells_name_the_status() {
    let complete = MetricResult::complete(536_870_912.0, "B", "s", "m");
    assert_eq!(
        status_metric_cell(&complete),
        ("512.0 MiB".to_owned(), Some("536,870,912 B".to_owned()))
    );
    assert_eq!(
        status_metric_cell(&partial(2_000.0, Some("why"))),
        (">= 2.000 kFLOPs".to_owned(), Some("2,000 FLOPs".to_owned()))
    );
    let unavailable = MetricResult::unavailable("B", "s", "m", "no getrusage");
    assert_eq!(
        status_metric_cell(&unavailable),
        ("unavailable".to_owned(), Some("no getrusage".to_owned()))
    );
}

#[test]
fn metric_cells() {
    let complete = MetricResult::complete(-1_500.0, "FLOPs", "s", "m");
    assert_eq!(table_metric_cell(&complete), "-1,500");
    assert_eq!(
        page_metric_cell(&complete),
        ("-1.500 kFLOPs".to_owned(), Some("-1,500 FLOPs".to_owned()))
    );
    let partial_one = partial(2_000.0, None);
    assert_eq!(table_metric_cell(&partial_one), ">=2,000");
    assert_eq!(
        page_metric_cell(&partial_one),
        (">= 2.000 kFLOPs".to_owned(), Some("2,000 FLOPs".to_owned()))
    );
    let small = MetricResult::complete(448.0, "FLOPs", "s", "m");
    assert_eq!(page_metric_cell(&small), ("448 FLOPs".to_owned(), None));
    assert_eq!(
        readable_metric_text(&partial(1_048_576.0, Some("no formula for aten::foo"))),
        "partial, at least 1.049 MFLOPs (1,048,576 FLOPs) (no formula for aten::foo)"
    );
    assert_eq!(readable_metric(&small), ("448 FLOPs".to_owned(), None));
    let unavailable = MetricResult::unavailable("FLOPs", "s", "m", "no formula");
    assert_eq!(table_metric_cell(&unavailable), "-");
    assert_eq!(page_metric_cell(&unavailable), ("-".to_owned(), None));
    assert_eq!(
        readable_metric(&unavailable),
        ("unavailable (no formula)".to_owned(), None)
    );
}

#[test]
fn paths_values_and_context() {
    assert_eq!(display_path(""), "(root)");
    assert_eq!(display_path("features.0"), "features.0");
    assert_eq!(display_output_path(""), "(output)");
    assert_eq!(display_output_path("0.logits"), "0.logits");
    let tensor = ValueMeta::Tensor(TensorMeta {
        shape: vec![1, 8],
        dtype: "torch.float32".into(),
        device: "cpu".into(),
        requires_grad: true,
    });
    let pair = ValueMeta::Tuple(SequenceMeta {
        items: vec![tensor.clone(), ValueMeta::None(EmptyMeta {})],
    });
    assert_eq!(shape_text(&pair), "([1, 8], None)");
    assert_eq!(value_text(&pair, false), "(tensor [1, 8] float32, None)");
    assert_eq!(
        value_text(&tensor, true),
        "tensor [1, 8] float32 on cpu, requires grad"
    );
    let list = ValueMeta::List(SequenceMeta {
        items: vec![ValueMeta::Scalar(TypeOnlyMeta {
            type_name: "int".into(),
        })],
    });
    assert_eq!(shape_text(&list), "[int]");
    assert_eq!(value_text(&list, true), "[int]");
    assert_eq!(or_unknown(None), "unknown");
    assert_eq!(or_unknown(Some("cuda:0")), "cuda:0");
    assert_eq!(threads_text(None), "unknown");
    assert_eq!(threads_text(Some(8)), "8");
    assert_eq!(recorded_text::<u64>(&None), "not recorded");
    assert_eq!(recorded_text(&Some(4)), "4");
    assert_eq!(recorded_json_text(&serde_json::Value::Null), "not recorded");
    assert_eq!(recorded_json_text(&serde_json::json!("on")), "on");
    assert_eq!(recorded_json_text(&serde_json::json!(true)), "true");
    assert_eq!(dtypes_or(&[], ", ", "none"), "none");
    let dtypes = ["float32".to_owned(), "float64".to_owned()];
    assert_eq!(dtypes_or(&dtypes, ",", NOT_RECORDED), "float32,float64");
}

#[test]
fn words() {
    assert_eq!(plural(0, "layer"), "0 layers");
    assert_eq!(plural(1, "layer"), "1 layer");
    assert_eq!(plural(2, "problem"), "2 problems");
    assert_eq!(
        verdict_words(Verdict::NoDetectableChange),
        "no detectable change"
    );
    assert_eq!(verdict_words(Verdict::Faster), "faster");
    assert_eq!(verdict_words(Verdict::Withheld), "withheld");
    assert_eq!(mode_word(AnalysisMode::Structure), "structure");
    assert_eq!(
        serde_name(&Verdict::NoDetectableChange),
        "no_detectable_change"
    );
    assert_eq!(
        serde_name(&AnalysisMode::Full),
        mode_word(AnalysisMode::Full)
    );
    assert_eq!(serde_name(&1.5), "");
    assert_eq!(noise_label("cpu_steal_ratio"), "CPU steal");
    assert_eq!(noise_label("cpu_frequency"), "CPU frequency");
    assert_eq!(percent_text(0.238_095), "23.8%");
    assert_eq!(percent_text(0.0), "0.0%");
    assert_eq!(percent_text(0.000_1), "<0.1%");
    assert_eq!(percent_text(0.999_9), ">99.9%");
    assert_eq!(percent_text(1.0), "100.0%");
    assert_eq!(percent_text(12.5), "1,250.0%");
    assert_eq!(
        process_group_words(ProcessGroupOrigin::Existing),
        "the caller's process group"
    );
    assert_eq!(ranks_text(&[]), "no rank");
    assert_eq!(ranks_text(&[1]), "rank 1");
    assert_eq!(ranks_text(&[1, 0]), "ranks 0, 1");
    assert_eq!(ranks_text(&[6, 0, 1, 2, 3, 3]), "ranks 0-3, 6");
    assert_eq!(ranks_text(&[0, 2, 4, 5]), "ranks 0, 2, 4, 5");
    assert_eq!(
        ranks_text(&[u64::MAX - 1, u64::MAX]),
        format!("ranks {}, {}", u64::MAX - 1, u64::MAX)
    );
}
