//! `torchscan-report compare`: two benchmark reports compared by the core, exactly as
//! `torchscan.compare_benchmarks` compares them, written as text, JSON or HTML, with an optional
//! gate on the verdict.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use torchscan_core::benchmark_comparison::{
    BenchCompareError, BenchCompareFailure, CompareOptions, compare_benchmarks_json,
};
use torchscan_core::schema::comparison::Verdict;
use torchscan_core::{Problem, Report, format_summary, read_report, render_html};

use crate::{
    EXIT_INVALID, EXIT_OK, EXIT_USAGE, Inputs, OutputFormat, display_name, is_stdin,
    print_problems, read_inputs, refuse_output_over_input, write_output,
};

/// The arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The benchmark report before the change (`-` reads standard input).
    #[arg(value_name = "BASELINE")]
    pub baseline: PathBuf,
    /// The benchmark report after the change (`-` reads standard input).
    #[arg(value_name = "CANDIDATE")]
    pub candidate: PathBuf,
    /// The `output_check` report of the two outputs (`-` reads standard input); when it failed,
    /// every delta is withheld, and without it the comparison is `unchecked`.
    #[arg(long, value_name = "CHECK")]
    pub check: Option<PathBuf>,
    /// `text` (the summary of the comparison), `json` (the `benchmark_comparison` report) or
    /// `html` (its self-contained page).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Write the output to this file instead of standard output (`-`): a regular file is replaced
    /// atomically, a symlink, hard link, device or FIFO is written through.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Confidence level of the intervals, in (0, 1).
    #[arg(long, value_name = "LEVEL", default_value_t = CompareOptions::default().confidence_level,
          value_parser = confidence_level, allow_negative_numbers = true)]
    pub confidence_level: f64,
    /// Bootstrap resamples, from 1 to 1,000,000.
    #[arg(long, value_name = "N", default_value_t = CompareOptions::default().bootstrap_resamples,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub bootstrap_resamples: u64,
    /// Seed of the bootstrap: the same reports and seed give the same comparison.
    #[arg(long, value_name = "SEED", default_value_t = CompareOptions::default().seed,
          allow_negative_numbers = true)]
    pub seed: u64,
    /// Smallest relative change that counts as faster or slower (0.02 is 2%), finite and >= 0.
    #[arg(long, value_name = "FRACTION", default_value_t = CompareOptions::default().min_effect,
          value_parser = min_effect, allow_negative_numbers = true)]
    pub min_effect: f64,
    /// Exit 1 when the overall verdict is one of these (comma-separated or repeated); the output
    /// is written first.
    #[arg(long, value_enum, value_name = "VERDICT", value_delimiter = ',')]
    pub fail_on: Vec<GateVerdict>,
}

/// The verdicts `--fail-on` can name, spelled as in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateVerdict {
    /// Significantly faster, by at least the minimum effect.
    #[value(name = "faster")]
    Faster,
    /// Significantly slower, by at least the minimum effect.
    #[value(name = "slower")]
    Slower,
    /// The interval lies within the minimum effect either way.
    #[value(name = "no_detectable_change")]
    NoDetectableChange,
    /// The interval is too wide to tell.
    #[value(name = "inconclusive")]
    Inconclusive,
    /// The output check failed: nothing is concluded.
    #[value(name = "withheld")]
    Withheld,
}

impl GateVerdict {
    fn matches(self, verdict: Verdict) -> bool {
        matches!(
            (self, verdict),
            (GateVerdict::Faster, Verdict::Faster)
                | (GateVerdict::Slower, Verdict::Slower)
                | (GateVerdict::NoDetectableChange, Verdict::NoDetectableChange)
                | (GateVerdict::Inconclusive, Verdict::Inconclusive)
                | (GateVerdict::Withheld, Verdict::Withheld)
        )
    }
}

fn parse_number(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| format!("`{text}` is not a number"))
}

fn confidence_level(text: &str) -> Result<f64, String> {
    let level = parse_number(text)?;
    if level > 0.0 && level < 1.0 {
        Ok(level)
    } else {
        Err(format!("must be in (0, 1), got {text}"))
    }
}

fn min_effect(text: &str) -> Result<f64, String> {
    let effect = parse_number(text)?;
    if effect.is_finite() && effect >= 0.0 {
        Ok(effect)
    } else {
        Err(format!("must be finite and >= 0, got {text}"))
    }
}

/// A problem of one side, located in that side's file: `baseline:$.x` becomes `$.x` of BASELINE.
/// Prints problems whose paths start with `LABEL:` as `FILE: PATH: MESSAGE`, each label of
/// `names` (`(label, file name)`) replaced by its file; any other problem as it is.
pub(crate) fn print_located_problems<L: AsRef<str>>(
    stderr: &mut dyn Write,
    problems: &[Problem],
    names: &[(L, String)],
) -> std::io::Result<()> {
    for problem in problems {
        let located = names.iter().find_map(|(label, name)| {
            problem
                .path
                .strip_prefix(label.as_ref())
                .and_then(|rest| rest.strip_prefix(':'))
                .map(|path| (name.as_str(), path))
        });
        match located {
            Some((name, path)) => writeln!(stderr, "{name}: {path}: {}", problem.message)?,
            None => writeln!(stderr, "torchscan-report: {problem}")?,
        }
    }
    Ok(())
}

/// Runs `compare` and returns its exit code.
pub fn compare(
    args: &CompareArgs,
    streams: (&mut Inputs<'_>, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (inputs_source, stdout, stderr) = streams;
    let mut inputs: Vec<(&str, &Path)> = vec![
        ("baseline", args.baseline.as_path()),
        ("candidate", args.candidate.as_path()),
    ];
    if let Some(check) = &args.check {
        inputs.push(("check", check.as_path()));
    }
    if inputs.iter().filter(|(_, path)| is_stdin(path)).count() > 1 {
        writeln!(
            stderr,
            "torchscan-report: only one of BASELINE, CANDIDATE and --check can be `-` (standard \
             input)"
        )?;
        return Ok(EXIT_USAGE);
    }
    let paths: Vec<&Path> = inputs.iter().map(|(_, path)| *path).collect();
    if let Some(code) =
        refuse_output_over_input(args.output.as_deref(), &paths, inputs_source, stderr)?
    {
        return Ok(code);
    }
    let texts = match read_inputs(&paths, inputs_source, stderr)? {
        Ok(texts) => texts,
        Err(code) => return Ok(code),
    };
    let names: Vec<(&str, String)> = inputs
        .iter()
        .map(|(side, path)| (*side, display_name(path)))
        .collect();
    let options = CompareOptions {
        confidence_level: args.confidence_level,
        bootstrap_resamples: args.bootstrap_resamples,
        seed: args.seed,
        min_effect: args.min_effect,
    };
    let json = match compare_benchmarks_json(
        &texts[0],
        &texts[1],
        texts.get(2).map(String::as_str),
        &options,
    ) {
        Ok(json) => json,
        Err(BenchCompareFailure::Invalid(problems)) => {
            print_located_problems(stderr, &problems, &names)?;
            return Ok(EXIT_INVALID);
        }
        Err(BenchCompareFailure::Refused(error @ BenchCompareError::InvalidOption(_))) => {
            writeln!(stderr, "torchscan-report: {error}")?;
            return Ok(EXIT_USAGE);
        }
        Err(BenchCompareFailure::Refused(error)) => {
            writeln!(
                stderr,
                "torchscan-report: cannot compare {} and {}: {error}",
                names[0].1, names[1].1
            )?;
            return Ok(EXIT_INVALID);
        }
        Err(BenchCompareFailure::Internal(problems)) => {
            writeln!(
                stderr,
                "torchscan-report: the comparison is not a valid report (a bug of torchscan):"
            )?;
            print_problems(stderr, "comparison", &problems)?;
            return Ok(EXIT_INVALID);
        }
    };
    // The JSON is the core's own text; the other formats read it back, so all three show one
    // comparison.
    let report = match read_report(&json) {
        Ok(report) => report,
        Err(problems) => {
            print_problems(stderr, "comparison", &problems)?;
            return Ok(EXIT_INVALID);
        }
    };
    let verdict = match &report {
        Report::BenchmarkComparison(comparison) => comparison.verdict,
        other => {
            writeln!(
                stderr,
                "torchscan-report: the comparison is a `{}` report",
                other.kind().as_str()
            )?;
            return Ok(EXIT_INVALID);
        }
    };
    let text = match args.format {
        OutputFormat::Json => json,
        OutputFormat::Text => format_summary(&report),
        OutputFormat::Html => match render_html(&report) {
            Ok(html) => html,
            Err(error) => {
                writeln!(stderr, "torchscan-report: {error}")?;
                return Ok(EXIT_INVALID);
            }
        },
    };
    let written = write_output(&text, args.output.as_deref(), stdout, stderr)?;
    if written != EXIT_OK {
        return Ok(written);
    }
    if args.fail_on.iter().any(|gate| gate.matches(verdict)) {
        let name = verdict.as_str();
        writeln!(
            stderr,
            "torchscan-report: the verdict is `{name}`, which --fail-on rejects"
        )?;
        return Ok(EXIT_INVALID);
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_parsers_accept_the_ranges_of_compare_benchmarks() {
        assert_eq!(confidence_level("0.9"), Ok(0.9));
        assert!(confidence_level("1").is_err());
        assert!(confidence_level("0").is_err());
        assert!(confidence_level("NaN").is_err());
        assert!(confidence_level("x").is_err());
        assert_eq!(min_effect("0"), Ok(0.0));
        assert!(min_effect("-0.1").is_err());
        assert!(min_effect("inf").is_err());
    }

    #[test]
    fn every_gate_matches_its_own_verdict_only() {
        let pairs = [
            (GateVerdict::Faster, Verdict::Faster),
            (GateVerdict::Slower, Verdict::Slower),
            (GateVerdict::NoDetectableChange, Verdict::NoDetectableChange),
            (GateVerdict::Inconclusive, Verdict::Inconclusive),
            (GateVerdict::Withheld, Verdict::Withheld),
        ];
        for (gate, own) in pairs {
            for (_, verdict) in pairs {
                assert_eq!(
                    gate.matches(verdict),
                    verdict == own,
                    "{gate:?} {verdict:?}"
                );
            }
            let spelled = gate.to_possible_value().expect("a value");
            assert_eq!(spelled.get_name(), own.as_str());
        }
    }
}
