//! Numbers as text: exact counts with thousands separators, readable numbers with SI or binary
//! prefixes and time units, changes and pairs of numbers.

use super::BYTES_PER_MIB;

/// Magnitudes from which numbers print in scientific notation (`1e308`) rather than as digits:
/// an `f64` that large prints its whole binary expansion otherwise, up to 309 digits.
pub const SCIENTIFIC_FROM: f64 = 1e21;

/// Formats `value` with `decimals` decimals and thousands separators: `4,191,866.300`.
///
/// A negative number that rounds to zero prints without its sign (`0.000`, never `-0.000`). A
/// magnitude of [`SCIENTIFIC_FROM`] or more prints as the shortest scientific notation that
/// reads back as the same `f64` (`1e308`, `-1.5e300`).
pub fn group_thousands(value: f64, decimals: usize) -> String {
    if value.is_finite() && value.abs() >= SCIENTIFIC_FROM {
        return format!("{value:e}");
    }
    let text = format!("{:.*}", decimals, value.abs());
    let (integer, fraction) = match text.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (text.as_str(), None),
    };
    let mut grouped = String::with_capacity(text.len() + integer.len() / 3 + 1);
    // Rounding can make a tiny negative number print as zero; keep "-0.000" out.
    if value < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        grouped.push('-');
    }
    for (index, digit) in integer.chars().enumerate() {
        if index > 0 && (integer.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if let Some(fraction) = fraction {
        grouped.push('.');
        grouped.push_str(fraction);
    }
    grouped
}

/// An integer with thousands separators, exact for every `u64`: `1,234,567`.
///
/// The text a `report_diff` records for changed layer fields. It differs from
/// [`float_count_text`] above 2^53, where that one rounds through `f64`.
pub fn count_text(count: u64) -> String {
    let digits = count.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// A count with thousands separators, converted to `f64` first: `1,234,567`.
///
/// What the text summary and the HTML page show for counts. It equals [`count_text`] up to 2^53
/// and rounds to the nearest `f64` above it (`9,007,199,254,740,992` for 2^53 + 1); kept apart
/// from [`count_text`] so that neither output changes.
pub fn float_count_text(count: u64) -> String {
    group_thousands(count as f64, 0)
}

/// A number with thousands separators, without decimals when it is an integer below 10^15, else
/// with three: `388,800`, `0.500`.
pub fn number_text(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        group_thousands(value, 0)
    } else {
        group_thousands(value, 3)
    }
}

/// Formats `value` as [`group_thousands`] does with `decimals` decimals, with more decimals when a
/// nonzero value would otherwise print as zero: two significant digits then (`0.00041`), in
/// scientific notation below 10^-15 (`1.2e-20`). Zero prints as zero.
pub fn grown_decimals(value: f64, decimals: usize) -> String {
    let text = group_thousands(value, decimals);
    if value == 0.0 || !value.is_finite() || text.bytes().any(|b| matches!(b, b'1'..=b'9')) {
        return text;
    }
    if value.abs() < 1e-15 {
        return format!("{value:.1e}");
    }
    // The position of the first significant decimal, then one more digit.
    let first = (-value.abs().log10()).ceil().max(1.0) as usize;
    let grown = group_thousands(value, first + 1);
    // log10 can land one short on exact powers of ten; never print zero.
    if grown.bytes().any(|b| matches!(b, b'1'..=b'9')) {
        grown
    } else {
        group_thousands(value, first + 2)
    }
}

/// A metric's number in display units: seconds as ms, bytes as MiB, hertz as MHz, counts without
/// decimals, other units as they are with three decimals; more decimals where a nonzero value
/// would print as zero ([`grown_decimals`]).
///
/// The text summaries' form (their lines are kept exactly, `Latency (block median): 0.006 ms`);
/// what people read elsewhere is [`readable_number`].
pub fn display_number(value: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{} ms", grown_decimals(value * 1e3, 3)),
        "B" => format!("{} MiB", grown_decimals(value / BYTES_PER_MIB, 3)),
        "count" if value.fract() == 0.0 => group_thousands(value, 0),
        "count" | "ratio" => grown_decimals(value, 3),
        "Hz" if value.abs() >= 1e6 || value == 0.0 => {
            format!("{} MHz", group_thousands(value / 1e6, 0))
        }
        "Hz" => format!("{} MHz", grown_decimals(value / 1e6, 3)),
        other => format!("{} {other}", grown_decimals(value, 3)),
    }
}

/// Decimal prefixes of counts and rates, largest first.
const DECIMAL_PREFIXES: [(&str, f64); 6] = [
    ("E", 1e18),
    ("P", 1e15),
    ("T", 1e12),
    ("G", 1e9),
    ("M", 1e6),
    ("k", 1e3),
];

/// Binary prefixes of bytes, largest first.
const BINARY_PREFIXES: [(&str, f64); 6] = [
    ("EiB", 1_152_921_504_606_846_976.0),
    ("PiB", 1_125_899_906_842_624.0),
    ("TiB", 1_099_511_627_776.0),
    ("GiB", 1_073_741_824.0),
    ("MiB", 1_048_576.0),
    ("KiB", 1024.0),
];

/// Time units up to the second, largest first.
const TIME_UNITS: [(&str, f64); 4] = [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)];

/// A number below 1 in magnitude with three significant digits: `0.498`, `0.000412`; zero as `0`.
fn small_digits(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    if value.abs() < 1e-15 {
        return format!("{value:.2e}");
    }
    let first = (-value.abs().log10()).ceil().max(1.0) as usize;
    group_thousands(value, first + 2)
}

/// Four significant digits of a magnitude below 1,000: `0.9766`, `1.234`, `12.34`, `123.4`; a
/// value that rounds up to the next power of ten keeps four (`99.996` is `100.0`).
fn four_digits(scaled: f64) -> String {
    let decimals_for = |magnitude: f64| {
        if magnitude >= 100.0 {
            1
        } else if magnitude >= 10.0 {
            2
        } else if magnitude >= 1.0 {
            3
        } else {
            4
        }
    };
    let decimals = decimals_for(scaled.abs());
    let text = group_thousands(scaled, decimals);
    let rounded: f64 = text
        .replace(',', "")
        .trim_start_matches('-')
        .parse()
        .unwrap_or(0.0);
    let fewer = decimals_for(rounded);
    if fewer < decimals {
        group_thousands(scaled, fewer)
    } else {
        text
    }
}

/// `value / factor` with four significant digits, or `None` when it rounds up to 1,000 (the next
/// prefix then applies: `999.96 k` is `1.000 M`).
fn scaled_digits(value: f64, factor: f64) -> Option<String> {
    let text = four_digits(value / factor);
    let rounded: f64 = text.replace(',', "").trim_start_matches('-').parse().ok()?;
    (rounded < 1000.0).then_some(text)
}

/// A prefixed number: the largest prefix whose scaled value is at least 1 (and stays below 1,000
/// once rounded); `None` below the smallest prefix.
fn prefixed(value: f64, prefixes: &[(&'static str, f64)]) -> Option<(String, &'static str)> {
    let magnitude = value.abs();
    let index = prefixes
        .iter()
        .position(|(_, factor)| magnitude >= *factor)?;
    let (prefix, factor) = prefixes[index];
    match scaled_digits(value, factor) {
        Some(text) => Some((text, prefix)),
        // Rounded up to 1,000: the next larger prefix, or grouped digits past the largest, and
        // past a thousand trillion of it four significant digits in scientific notation, with
        // no prefix.
        None if index > 0 => {
            let (larger, factor) = prefixes[index - 1];
            Some((four_digits(value / factor), larger))
        }
        None if magnitude / factor >= 1e15 => Some((format!("{value:.3e}"), "")),
        None => Some((group_thousands(value / factor, 0), prefix)),
    }
}

/// Whether a unit takes its decimal prefix glued to it (`MFLOPs`, `GFLOP/s`, `GB/s`: bandwidth
/// in decimal bytes per second, as datasheets give it) rather than before it with a space
/// (`4.192 M samples/s`).
fn glued_prefix(unit: &str) -> bool {
    matches!(
        unit,
        "FLOPs" | "MACs" | "DMAs" | "FLOP/s" | "Hz" | "B/s" | "FLOP/B"
    )
}

/// A number people read at a glance, in its unit family: times in ns, us, ms or s; bytes in B,
/// KiB, MiB, GiB...; counts and rates with k, M, G, T...; four significant digits
/// (`11.98 MFLOPs`, `412.3 ns`, `11.60 KiB`, `4.192 M samples/s`), integers below 1,000 without
/// decimals (`32 samples`, `132 B`), ratios with three decimals (three significant digits below
/// 0.001). A nonzero value never prints
/// as zero, and zero prints as `0` with its unit. Non-finite values print as they are.
///
/// The exact value goes beside it ([`exact_number`]): in parentheses in the text summary, as the
/// `title` of the HTML element.
pub fn readable_number(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return format!("{value} {unit}");
    }
    let plain = |text: String, unit: &str| match unit {
        "count" | "ratio" | "" => text,
        unit => format!("{text} {unit}"),
    };
    match unit {
        "ratio" if value.abs() < 1e-3 && value != 0.0 => small_digits(value),
        "ratio" => group_thousands(value, 3),
        "s" => {
            let magnitude = value.abs();
            if magnitude == 0.0 {
                return "0 s".to_owned();
            }
            if magnitude >= 1000.0 {
                return format!("{} s", group_thousands(value, 0));
            }
            for (index, (name, factor)) in TIME_UNITS.iter().enumerate() {
                if magnitude >= *factor {
                    return match scaled_digits(value, *factor) {
                        Some(text) => format!("{text} {name}"),
                        // Rounded up to 1,000 of this unit: the next larger one.
                        None if index > 0 => {
                            let (larger, factor) = TIME_UNITS[index - 1];
                            format!("{} {larger}", four_digits(value / factor))
                        }
                        None => format!("{} s", group_thousands(value, 0)),
                    };
                }
            }
            // Below a nanosecond: nanoseconds with three significant digits.
            format!("{} ns", small_digits(value / 1e-9))
        }
        "B" => {
            if value.fract() == 0.0 && value.abs() < 1024.0 {
                return format!("{} B", group_thousands(value, 0));
            }
            match prefixed(value, &BINARY_PREFIXES) {
                Some((text, "")) => format!("{text} B"),
                Some((text, prefix)) => format!("{text} {prefix}"),
                None if value.abs() < 1.0 => format!("{} B", small_digits(value)),
                None => format!("{} B", four_digits(value)),
            }
        }
        unit => {
            if value.abs() < 1000.0 {
                let text = if value.fract() == 0.0 {
                    group_thousands(value, 0)
                } else if value.abs() >= 1.0 {
                    four_digits(value)
                } else {
                    small_digits(value)
                };
                return plain(text, unit);
            }
            match prefixed(value, &DECIMAL_PREFIXES) {
                Some((text, "")) => plain(text, unit),
                Some((text, prefix)) if glued_prefix(unit) => format!("{text} {prefix}{unit}"),
                Some((text, prefix)) => match unit {
                    "count" | "" => format!("{text} {prefix}"),
                    unit => format!("{text} {prefix} {unit}"),
                },
                None => plain(group_thousands(value, 0), unit),
            }
        }
    }
}

/// The exact value of a number with its unit, unscaled: integers with thousands separators
/// (`11,981,440 FLOPs`), other numbers as the shortest decimal that reads back as the same
/// `f64` (`0.000412345 s`). Counts and ratios carry no unit word.
pub fn exact_number(value: f64, unit: &str) -> String {
    let text = if value.fract() == 0.0 && value.abs() < 1e15 {
        group_thousands(value, 0)
    } else if !value.is_finite() {
        format!("{value}")
    } else if value.abs() >= SCIENTIFIC_FROM {
        format!("{value:e}")
    } else {
        // The shortest decimal that reads back as the same f64, its integer part grouped.
        let shortest = format!("{}", value.abs());
        let (integer, fraction) = shortest.split_once('.').unwrap_or((&shortest, ""));
        let sign = if value < 0.0 { "-" } else { "" };
        let integer = integer
            .parse::<u64>()
            .map_or_else(|_| integer.to_owned(), count_text);
        if fraction.is_empty() {
            format!("{sign}{integer}")
        } else {
            format!("{sign}{integer}.{fraction}")
        }
    };
    match unit {
        "count" | "ratio" | "" => text,
        unit => format!("{text} {unit}"),
    }
}

/// A change from `before` to `after` as people read it: `1.227 KiB -> 2.414 KiB (+1.188 KiB)`,
/// with the exact values beside when any differs from its readable form:
/// `1.227 KiB -> 2.414 KiB (+1.188 KiB; exact 1,256 B -> 2,472 B, +1,216 B)`.
pub fn readable_change(before: f64, after: f64, delta: f64, unit: &str) -> String {
    let sign = if delta >= 0.0 { "+" } else { "" };
    let readable = [before, after, delta].map(|value| readable_number(value, unit));
    let exact = [before, after, delta].map(|value| exact_number(value, unit));
    let mut text = format!("{} -> {} ({sign}{}", readable[0], readable[1], readable[2]);
    if readable != exact {
        text.push_str(&format!(
            "; exact {} -> {}, {sign}{}",
            exact[0], exact[1], exact[2]
        ));
    }
    text.push(')');
    text
}

/// Two values as people read them, `6.140 us -> 6.067 us`, with the exact values beside when
/// either differs from its readable form: `6.140 us -> 6.067 us (exact 0.000006140171 s ->
/// 0.0000060672 s)`.
pub fn readable_pair(before: f64, after: f64, unit: &str) -> String {
    let readable = [before, after].map(|value| readable_number(value, unit));
    let exact = [before, after].map(|value| exact_number(value, unit));
    if readable == exact {
        format!("{} -> {}", readable[0], readable[1])
    } else {
        format!(
            "{} -> {} (exact {} -> {})",
            readable[0], readable[1], exact[0], exact[1]
        )
    }
}

/// [`readable_number`] with the exact value in parentheses when the two differ:
/// `11.98 MFLOPs (11,981,440 FLOPs)`, `448`, `132 B`.
pub fn readable_with_exact(value: f64, unit: &str) -> String {
    let readable = readable_number(value, unit);
    let exact = exact_number(value, unit);
    if readable == exact {
        readable
    } else {
        format!("{readable} ({exact})")
    }
}

/// An SVG coordinate of the page's charts, to a tenth of a unit: `12.5`.
pub fn coordinate(value: f64) -> String {
    format!("{value:.1}")
}

/// A byte count as people say it, in binary units to one decimal where it has one: `100 bytes`,
/// `1.5 KiB`, `1 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
