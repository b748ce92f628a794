//! The `torchscan-report` command line over torchscan-core: saved reports are validated,
//! summarised, compared, rendered and described without Python and without rerunning anything.
//!
//! Exit codes: 0 success, 1 invalid input (or, for `diff` and `compare`, reports that cannot be
//! compared, and for `compare` a failed `--fail-on` gate), 2 usage (bad arguments, unreadable
//! input files or an unwritable output file).

mod compare;
mod help;

pub use compare::{CompareArgs, GateVerdict};

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use torchscan_core::{
    CompareFailure, Problem, Report, compare_report_texts, format_summary, json_schema_text,
    read_report, render_html, to_json_text,
};

/// Exit code: everything succeeded.
pub const EXIT_OK: i32 = 0;
/// Exit code: an input report is invalid, `diff` or `compare` refuses to compare the two reports,
/// or a `compare --fail-on` gate failed.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: bad arguments, an unreadable input file or an unwritable output file.
pub const EXIT_USAGE: i32 = 2;

/// Validate, summarise, compare, render and describe saved torchscan reports.
#[derive(Debug, Parser)]
#[command(name = "torchscan-report", version, after_help = help::MAIN)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `torchscan-report`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check reports against schema version 1 and its invariants; print one line per problem.
    #[command(after_help = help::VALIDATE)]
    Validate {
        /// Report files (`-` reads standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Print the text summary of a report.
    #[command(after_help = help::SUMMARY)]
    Summary {
        /// Report file (`-` reads standard input).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the JSON Schema of report schema version 1.
    #[command(after_help = help::SCHEMA)]
    Schema,
    /// Compare two analysis reports of a model: totals, and layers added, removed and changed.
    ///
    /// Both reports must be valid `analysis` reports of one schema version, made in the same
    /// analysis mode with the same estimate methods; otherwise nothing is written and the exit
    /// code is 1.
    #[command(after_help = help::DIFF)]
    Diff {
        /// The analysis before the change (`-` reads standard input).
        #[arg(value_name = "BEFORE")]
        before: PathBuf,
        /// The analysis after the change (`-` reads standard input).
        #[arg(value_name = "AFTER")]
        after: PathBuf,
        /// `text` (the summary of the diff), `json` (the `report_diff` report) or `html` (its
        /// self-contained page).
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Write the output to this file (replaced atomically) instead of standard output (`-`).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Compare two benchmark reports: ratios with bootstrap intervals and a verdict.
    ///
    /// The same comparison as `torchscan.compare_benchmarks`, with the same defaults. Both reports
    /// must be valid `benchmark` reports of the same work per call; otherwise nothing is written
    /// and the exit code is 1.
    #[command(after_help = help::COMPARE)]
    Compare(CompareArgs),
    /// Render a report as one self-contained HTML page (inline CSS, no script, no external request).
    #[command(after_help = help::RENDER)]
    Render {
        /// Report file (`-` reads standard input).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Write the page to this file (replaced atomically) instead of standard output (`-`).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
    },
}

/// The output formats of `diff` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The text summary of the result.
    Text,
    /// The result report as pretty JSON.
    Json,
    /// The result report as one self-contained HTML page.
    Html,
}

/// Reads a file, or standard input for `-`.
pub(crate) fn read_input(path: &Path, stdin: &mut dyn Read) -> std::io::Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        stdin.read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

/// Reads every input in order. The first that cannot be read is reported on `stderr` and gives
/// `None`: the command then exits with the usage code.
pub(crate) fn read_inputs(
    paths: &[&Path],
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> std::io::Result<Option<Vec<String>>> {
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        match read_input(path, stdin) {
            Ok(text) => texts.push(text),
            Err(error) => {
                writeln!(
                    stderr,
                    "torchscan-report: cannot read {}: {error}",
                    display_name(path)
                )?;
                return Ok(None);
            }
        }
    }
    Ok(Some(texts))
}

pub(crate) fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

pub(crate) fn print_problems(
    out: &mut dyn Write,
    name: &str,
    problems: &[Problem],
) -> std::io::Result<()> {
    for problem in problems {
        writeln!(out, "{name}: {problem}")?;
    }
    Ok(())
}

fn validate(
    files: &[PathBuf],
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let mut invalid = 0usize;
    let mut unreadable = 0usize;
    for path in files {
        let name = display_name(path);
        match read_input(path, stdin) {
            Err(error) => {
                unreadable += 1;
                writeln!(stderr, "torchscan-report: cannot read {name}: {error}")?;
            }
            Ok(text) => {
                if let Err(problems) = read_report(&text) {
                    invalid += 1;
                    print_problems(stdout, &name, &problems)?;
                }
            }
        }
    }
    let checked = files.len() - unreadable;
    writeln!(
        stderr,
        "{checked} checked: {} valid, {invalid} invalid",
        checked - invalid
    )?;
    Ok(if unreadable > 0 {
        EXIT_USAGE
    } else if invalid > 0 {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

fn summary(
    path: &Path,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let name = display_name(path);
    let text = match read_input(path, stdin) {
        Ok(text) => text,
        Err(error) => {
            writeln!(stderr, "torchscan-report: cannot read {name}: {error}")?;
            return Ok(EXIT_USAGE);
        }
    };
    match read_report(&text) {
        Ok(report) => {
            stdout.write_all(format_summary(&report).as_bytes())?;
            Ok(EXIT_OK)
        }
        Err(problems) => {
            print_problems(stderr, &name, &problems)?;
            Ok(EXIT_INVALID)
        }
    }
}

pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, then a rename, so
/// that readers never see a partial file and a failure leaves any previous file as it was.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary_name = OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = directory.join(temporary_name);
    let written = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

fn diff(
    before: &Path,
    after: &Path,
    format: OutputFormat,
    output: Option<&Path>,
    streams: (&mut dyn Read, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (stdin, stdout, stderr) = streams;
    if is_stdin(before) && is_stdin(after) {
        writeln!(
            stderr,
            "torchscan-report: only one of BEFORE and AFTER can be `-` (standard input)"
        )?;
        return Ok(EXIT_USAGE);
    }
    let Some(texts) = read_inputs(&[before, after], stdin, stderr)? else {
        return Ok(EXIT_USAGE);
    };
    let (before_name, after_name) = (display_name(before), display_name(after));
    let diff = match compare_report_texts(&texts[0], &texts[1]) {
        Ok(diff) => diff,
        Err(CompareFailure::Invalid {
            before: before_problems,
            after: after_problems,
        }) => {
            print_problems(stderr, &before_name, &before_problems)?;
            print_problems(stderr, &after_name, &after_problems)?;
            return Ok(EXIT_INVALID);
        }
        Err(CompareFailure::Refused(error)) => {
            writeln!(
                stderr,
                "torchscan-report: cannot compare {before_name} and {after_name}: {error}"
            )?;
            return Ok(EXIT_INVALID);
        }
        Err(failure @ CompareFailure::Internal(_)) => {
            writeln!(stderr, "torchscan-report: {failure}")?;
            return Ok(EXIT_INVALID);
        }
    };
    let report = Report::ReportDiff(Box::new(diff));
    let text = match format {
        OutputFormat::Text => format_summary(&report),
        OutputFormat::Json => to_json_text(&report),
        OutputFormat::Html => match render_html(&report) {
            Ok(html) => html,
            Err(error) => {
                writeln!(stderr, "torchscan-report: {error}")?;
                return Ok(EXIT_INVALID);
            }
        },
    };
    write_output(&text, output, stdout, stderr)
}

pub(crate) fn write_output(
    text: &str,
    output: Option<&Path>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    match output.filter(|path| !is_stdin(path)) {
        None => {
            stdout.write_all(text.as_bytes())?;
            Ok(EXIT_OK)
        }
        Some(path) => match write_atomically(path, text) {
            Ok(()) => Ok(EXIT_OK),
            Err(error) => {
                writeln!(
                    stderr,
                    "torchscan-report: cannot write {}: {error}",
                    path.display()
                )?;
                Ok(EXIT_USAGE)
            }
        },
    }
}

fn render(
    path: &Path,
    output: Option<&Path>,
    streams: (&mut dyn Read, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (stdin, stdout, stderr) = streams;
    let name = display_name(path);
    let text = match read_input(path, stdin) {
        Ok(text) => text,
        Err(error) => {
            writeln!(stderr, "torchscan-report: cannot read {name}: {error}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let report = match read_report(&text) {
        Ok(report) => report,
        Err(problems) => {
            print_problems(stderr, &name, &problems)?;
            return Ok(EXIT_INVALID);
        }
    };
    match render_html(&report) {
        Ok(html) => write_output(&html, output, stdout, stderr),
        Err(error) => {
            writeln!(stderr, "torchscan-report: {name}: {error}")?;
            Ok(EXIT_INVALID)
        }
    }
}

/// Runs the command line with explicit streams and returns the exit code.
pub fn run<I, T>(
    args: I,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let rendered = error.render().to_string();
            return if error.use_stderr() {
                let _ = stderr.write_all(rendered.as_bytes());
                EXIT_USAGE
            } else {
                let _ = stdout.write_all(rendered.as_bytes());
                EXIT_OK
            };
        }
    };
    let outcome = match &cli.command {
        Command::Validate { files } => validate(files, stdin, stdout, stderr),
        Command::Summary { file } => summary(file, stdin, stdout, stderr),
        Command::Schema => stdout
            .write_all(json_schema_text().as_bytes())
            .map(|()| EXIT_OK),
        Command::Diff {
            before,
            after,
            format,
            output,
        } => diff(
            before,
            after,
            *format,
            output.as_deref(),
            (stdin, stdout, stderr),
        ),
        Command::Compare(args) => compare::compare(args, (stdin, stdout, stderr)),
        Command::Render { file, output } => {
            render(file, output.as_deref(), (stdin, stdout, stderr))
        }
    };
    let code = match outcome {
        Ok(code) => code,
        // A closed stdout (`| head`) is not the user's error; anything else is reported.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(error) => {
            let _ = writeln!(stderr, "torchscan-report: {error}");
            EXIT_INVALID
        }
    };
    let _ = stdout.flush();
    code
}

/// Runs the command line on the process's arguments and standard streams.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run(
        args,
        &mut stdin.lock(),
        &mut stdout.lock(),
        &mut stderr.lock(),
    )
}
