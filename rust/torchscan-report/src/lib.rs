//! The `torchscan-report` command line over torchscan-core: saved reports are validated,
//! summarised, compared, merged, rendered and described without Python and without rerunning
//! anything.
//!
//! Exit codes: 0 success; 1 invalid input (a report that fails validation, is not valid UTF-8 or
//! whose JSON value is not an object) or, for `diff` and `compare`, reports that cannot be
//! compared, for `merge` rank reports that cannot be merged, and for `compare` a failed
//! `--fail-on` gate; 2 usage: bad arguments (including
//! standard input named twice and a bad `--max-input-bytes` or `TORCHSCAN_MAX_INPUT_BYTES`), an
//! input that cannot be read (missing, a directory, larger than the input limit, a device that
//! never ends), and an output that cannot be written, be it `-o FILE` or standard output (a full
//! device, a closed pipe, a read-only file system, a missing directory, a directory as target),
//! and an output that is the same file as an input (`-o` naming an input by any path, hard link
//! or symlink, or standard output redirected into an input), refused before anything is read.
//!
//! Every input is read through [`torchscan_core::files::read_input`] (at most the limit plus one
//! byte) and every output file is written through [`torchscan_core::files::write_output`].

mod compare;
mod help;
mod merge;

pub use compare::{CompareArgs, GateVerdict};
pub use merge::MergeArgs;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use torchscan_core::files::{self, DEFAULT_MAX_INPUT_BYTES, FileIdentity};
use torchscan_core::{
    CompareFailure, Problem, Report, compare_report_texts, format_summary, json_schema_text,
    read_report, render_html, to_json_text,
};

/// Exit code: everything succeeded.
pub const EXIT_OK: i32 = 0;
/// Exit code: an input report is invalid, `diff` or `compare` refuses to compare the two reports,
/// `merge` refuses to merge the rank reports, or a `compare --fail-on` gate failed.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: bad arguments, an unreadable input or an output (file or standard output) that
/// cannot be written.
pub const EXIT_USAGE: i32 = 2;

/// The environment variable that sets the input limit when `--max-input-bytes` is not given.
pub const MAX_INPUT_BYTES_VARIABLE: &str = "TORCHSCAN_MAX_INPUT_BYTES";

/// Validate, summarise, compare, merge, render and describe saved torchscan reports.
#[derive(Debug, Parser)]
#[command(name = "torchscan-report", version, propagate_version = true, after_help = help::MAIN)]
pub struct Cli {
    /// Refuse an input longer than this many bytes (default 1073741824, 1 GiB; also
    /// TORCHSCAN_MAX_INPUT_BYTES); no more than one byte past it is ever read.
    #[arg(long, global = true, value_name = "BYTES", allow_hyphen_values = true)]
    pub max_input_bytes: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `torchscan-report`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check reports against schema version 1 and its invariants; print one line per problem.
    #[command(display_name = "torchscan-report", after_help = help::VALIDATE)]
    Validate {
        /// Report files (`-` reads standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Print the text summary of a saved report (python -m torchscan summary analyses a model).
    #[command(display_name = "torchscan-report", after_help = help::SUMMARY)]
    Summary {
        /// Report file (`-` reads standard input).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the JSON Schema of report schema version 1.
    #[command(display_name = "torchscan-report", after_help = help::SCHEMA)]
    Schema,
    /// Compare two analysis reports of a model: totals, and layers added, removed and changed.
    ///
    /// Both reports must be valid `analysis` reports of one schema version, made in the same
    /// analysis mode with the same estimate methods; otherwise nothing is written and the exit
    /// code is 1.
    #[command(display_name = "torchscan-report", after_help = help::DIFF)]
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
        /// Write the output to this file instead of standard output (`-`): a regular file is
        /// replaced atomically, a symlink, hard link, device or FIFO is written through.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Compare two saved benchmark reports: ratios, intervals, a verdict (python -m torchscan compare
    /// measures two workloads).
    ///
    /// The same comparison as `torchscan.compare_benchmarks`, with the same defaults. Both reports
    /// must be valid `benchmark` reports, or both merged `distributed_benchmark` reports (compared
    /// by step time and job throughput), of the same work per call; otherwise nothing is written
    /// and the exit code is 1.
    #[command(display_name = "torchscan-report", after_help = help::COMPARE)]
    Compare(CompareArgs),
    /// Merge the benchmark reports of every rank of a distributed job into one report.
    ///
    /// The same merge as `torchscan.merge_rank_reports`: the `distributed_benchmark` report, with
    /// the job's step time (per aligned block, the slowest rank's), its throughput, the straggler
    /// and every rank's report. The reports must be valid `benchmark` reports of every rank of one
    /// job, each once, in any order, with the same workload, settings and aligned blocks;
    /// otherwise nothing is written and the exit code is 1.
    #[command(display_name = "torchscan-report", after_help = help::MERGE)]
    Merge(MergeArgs),
    /// Render a report as one self-contained HTML page (inline CSS, no script, no external request).
    #[command(display_name = "torchscan-report", after_help = help::RENDER)]
    Render {
        /// Report file (`-` reads standard input).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Write the page to this file instead of standard output (`-`): a regular file is
        /// replaced atomically, a symlink, hard link, device or FIFO is written through.
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

/// Which regular files standard input and standard output are, when they are redirected from or
/// to one (`< report.json`, `>> report.json`): an output may not be the same file as an input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StandardFiles {
    /// The file standard input reads, when it is a regular file.
    pub stdin: Option<FileIdentity>,
    /// The file standard output writes, when it is a regular file.
    pub stdout: Option<FileIdentity>,
}

impl StandardFiles {
    /// The files behind this process's standard input and output.
    pub fn of_process() -> StandardFiles {
        use std::os::fd::AsFd;
        let identity = |descriptor: std::os::fd::BorrowedFd<'_>| {
            descriptor
                .try_clone_to_owned()
                .ok()
                .and_then(|owned| FileIdentity::of_file(&std::fs::File::from(owned)))
        };
        StandardFiles {
            stdin: identity(std::io::stdin().as_fd()),
            stdout: identity(std::io::stdout().as_fd()),
        }
    }
}

/// Where inputs come from: standard input for `-`, files otherwise, each at most `max_bytes`.
pub(crate) struct Inputs<'a> {
    pub(crate) stdin: &'a mut dyn Read,
    pub(crate) max_bytes: u64,
    pub(crate) standard: StandardFiles,
}

/// Refuses, before anything is read, an output that is the same file as one of `paths` (the
/// command's inputs): `output` is `-o` (`None` or `-`: standard output). Files are compared by
/// identity (device and inode), so another path, a hard link or a symlink to an input is refused
/// too. Prints one line on `stderr` and gives [`EXIT_USAGE`]; `None` when the output is another
/// file.
pub(crate) fn refuse_output_over_input(
    output: Option<&Path>,
    paths: &[&Path],
    inputs: &Inputs<'_>,
    stderr: &mut dyn Write,
) -> std::io::Result<Option<i32>> {
    let named = output.filter(|path| !is_stdin(path));
    let target = match named {
        Some(path) => FileIdentity::of_path(path),
        None => inputs.standard.stdout,
    };
    let Some(target) = target else {
        return Ok(None);
    };
    let clobbered = paths.iter().find(|path| {
        let identity = if is_stdin(path) {
            inputs.standard.stdin
        } else {
            FileIdentity::of_path(path)
        };
        identity == Some(target)
    });
    let Some(input) = clobbered else {
        return Ok(None);
    };
    let input = display_name(input);
    match named {
        Some(path) => writeln!(
            stderr,
            "torchscan-report: the output {} is the same file as the input {input}: nothing was \
             read or written; choose another output file",
            path.display()
        )?,
        None => writeln!(
            stderr,
            "torchscan-report: standard output is the same file as the input {input}: nothing \
             was read or written; redirect standard output to another file"
        )?,
    }
    Ok(Some(EXIT_USAGE))
}

/// Why an input gave no text.
pub(crate) enum InputFailure {
    /// It cannot be read: the message names it (exit 2).
    Unreadable(std::io::Error),
    /// It is not UTF-8 text, so not a report (exit 1).
    NotText(Problem),
}

impl InputFailure {
    /// Prints the failure as one line on `stderr` and gives the exit code.
    pub(crate) fn report(&self, name: &str, stderr: &mut dyn Write) -> std::io::Result<i32> {
        match self {
            InputFailure::Unreadable(error) => {
                writeln!(stderr, "torchscan-report: {error}")?;
                Ok(EXIT_USAGE)
            }
            InputFailure::NotText(problem) => {
                writeln!(stderr, "{name}: {problem}")?;
                Ok(EXIT_INVALID)
            }
        }
    }
}

/// Reads a file, or standard input for `-`, as UTF-8 text of at most the input limit.
pub(crate) fn read_input(path: &Path, inputs: &mut Inputs<'_>) -> Result<String, InputFailure> {
    let bytes = if is_stdin(path) {
        files::read_stream(&mut *inputs.stdin, Path::new("<stdin>"), inputs.max_bytes)
    } else {
        files::read_input(path, inputs.max_bytes)
    }
    .map_err(InputFailure::Unreadable)?;
    String::from_utf8(bytes).map_err(|error| {
        let utf8 = error.utf8_error();
        InputFailure::NotText(Problem::new(
            "$",
            format!(
                "not valid UTF-8 (invalid byte at offset {}); a report is JSON text in UTF-8",
                utf8.valid_up_to()
            ),
        ))
    })
}

/// Reads every input in order. The first that cannot be read or is not text is reported on
/// `stderr` and gives the exit code (2 unreadable, 1 not text) as the error.
pub(crate) fn read_inputs(
    paths: &[&Path],
    inputs: &mut Inputs<'_>,
    stderr: &mut dyn Write,
) -> std::io::Result<Result<Vec<String>, i32>> {
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        match read_input(path, inputs) {
            Ok(text) => texts.push(text),
            Err(failure) => return failure.report(&display_name(path), stderr).map(Err),
        }
    }
    Ok(Ok(texts))
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
    inputs: &mut Inputs<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    if files.iter().filter(|path| is_stdin(path)).count() > 1 {
        writeln!(
            stderr,
            "torchscan-report: standard input (`-`) can be named only once"
        )?;
        return Ok(EXIT_USAGE);
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    if let Some(code) = refuse_output_over_input(None, &paths, inputs, stderr)? {
        return Ok(code);
    }
    let mut invalid = 0usize;
    let mut unreadable = 0usize;
    for path in files {
        let name = display_name(path);
        match read_input(path, inputs) {
            Err(InputFailure::Unreadable(error)) => {
                unreadable += 1;
                writeln!(stderr, "torchscan-report: {error}")?;
            }
            Err(InputFailure::NotText(problem)) => {
                invalid += 1;
                print_problems(stdout, &name, &[problem])?;
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
    // Files that could not be read are counted apart: they are neither valid nor invalid.
    let not_read = if unreadable > 0 {
        format!("; {unreadable} could not be read")
    } else {
        String::new()
    };
    writeln!(
        stderr,
        "{checked} checked: {} valid, {invalid} invalid{not_read}",
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
    inputs: &mut Inputs<'_>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    if let Some(code) = refuse_output_over_input(None, &[path], inputs, stderr)? {
        return Ok(code);
    }
    let name = display_name(path);
    let text = match read_input(path, inputs) {
        Ok(text) => text,
        Err(failure) => return failure.report(&name, stderr),
    };
    match read_report(&text) {
        Ok(report) => write_output(&format_summary(&report), None, stdout, stderr),
        Err(problems) => {
            print_problems(stderr, &name, &problems)?;
            Ok(EXIT_INVALID)
        }
    }
}

pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn diff(
    before: &Path,
    after: &Path,
    format: OutputFormat,
    output: Option<&Path>,
    streams: (&mut Inputs<'_>, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (inputs, stdout, stderr) = streams;
    if is_stdin(before) && is_stdin(after) {
        writeln!(
            stderr,
            "torchscan-report: only one of BEFORE and AFTER can be `-` (standard input)"
        )?;
        return Ok(EXIT_USAGE);
    }
    if let Some(code) = refuse_output_over_input(output, &[before, after], inputs, stderr)? {
        return Ok(code);
    }
    let texts = match read_inputs(&[before, after], inputs, stderr)? {
        Ok(texts) => texts,
        Err(code) => return Ok(code),
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

/// Writes `text` to standard output (no `-o`, or `-o -`) or to the file through the one writer.
/// Either way, an output that cannot be written is one line on `stderr` and exit code 2.
pub(crate) fn write_output(
    text: &str,
    output: Option<&Path>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let written = match output.filter(|path| !is_stdin(path)) {
        None => stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|error| {
                files::FileError::wrap(files::FileOperation::Write, Path::new(STDOUT_NAME), error)
            }),
        Some(path) => files::write_output(path, text.as_bytes()),
    };
    match written {
        Ok(()) => Ok(EXIT_OK),
        Err(error) => {
            writeln!(stderr, "torchscan-report: {error}")?;
            Ok(EXIT_USAGE)
        }
    }
}

/// How standard output is named in messages.
const STDOUT_NAME: &str = "<stdout>";

fn render(
    path: &Path,
    output: Option<&Path>,
    streams: (&mut Inputs<'_>, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (inputs, stdout, stderr) = streams;
    if let Some(code) = refuse_output_over_input(output, &[path], inputs, stderr)? {
        return Ok(code);
    }
    let name = display_name(path);
    let text = match read_input(path, inputs) {
        Ok(text) => text,
        Err(failure) => return failure.report(&name, stderr),
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

/// Runs the command line with explicit streams and returns the exit code. The streams are not
/// files: no output is compared with standard input or output (see [`run_with_standard_files`]).
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
    run_with_standard_files(args, (stdin, stdout, stderr), StandardFiles::default())
}

/// [`run`], where `standard` says which regular files `stdin` and `stdout` read and write, so
/// that standard output redirected into an input (`>> input.json`), or `-o` naming the file that
/// standard input reads, is refused.
pub fn run_with_standard_files<I, T>(
    args: I,
    streams: (&mut dyn Read, &mut dyn Write, &mut dyn Write),
    standard: StandardFiles,
) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let (stdin, stdout, stderr) = streams;
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
    let max_bytes = match max_input_bytes(
        cli.max_input_bytes.as_deref(),
        std::env::var_os(MAX_INPUT_BYTES_VARIABLE),
    ) {
        Ok(max_bytes) => max_bytes,
        Err(message) => {
            let _ = writeln!(stderr, "torchscan-report: {message}");
            return EXIT_USAGE;
        }
    };
    let inputs = &mut Inputs {
        stdin,
        max_bytes,
        standard,
    };
    let outcome = match &cli.command {
        Command::Validate { files } => validate(files, inputs, stdout, stderr),
        Command::Summary { file } => summary(file, inputs, stdout, stderr),
        Command::Schema => write_output(&json_schema_text(), None, stdout, stderr),
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
            (inputs, stdout, stderr),
        ),
        Command::Compare(args) => compare::compare(args, (inputs, stdout, stderr)),
        Command::Merge(args) => merge::merge(args, (inputs, stdout, stderr)),
        Command::Render { file, output } => {
            render(file, output.as_deref(), (inputs, stdout, stderr))
        }
    };
    // The outputs themselves are written by `write_output`; what fails here is a line of
    // `validate`'s problems on standard output or a message on standard error. Either way the
    // output could not be written: the same exit code as for `-o FILE`, a closed pipe included.
    let flushed = outcome.and_then(|code| stdout.flush().map(|()| code));
    match flushed {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(
                stderr,
                "torchscan-report: cannot write {STDOUT_NAME}: {error}"
            );
            EXIT_USAGE
        }
    }
}

/// The input limit: `--max-input-bytes`, else the environment variable, else 1 GiB. A value that
/// is not a whole number of bytes from 1 up gives the one-line message of the usage error.
fn max_input_bytes(option: Option<&str>, variable: Option<OsString>) -> Result<u64, String> {
    let (source, value) = match (option, variable) {
        (Some(value), _) => ("--max-input-bytes", value.to_owned()),
        (None, Some(value)) => (
            MAX_INPUT_BYTES_VARIABLE,
            value.to_string_lossy().into_owned(),
        ),
        (None, None) => return Ok(DEFAULT_MAX_INPUT_BYTES),
    };
    match value.trim().parse::<u64>() {
        Ok(bytes) if bytes >= 1 => Ok(bytes),
        _ => Err(format!(
            "invalid {source} value `{}`: expected a whole number of bytes, at least 1",
            value.escape_debug()
        )),
    }
}

/// Runs the command line on the process's arguments and standard streams.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let standard = StandardFiles::of_process();
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with_standard_files(
        args,
        (&mut stdin.lock(), &mut stdout.lock(), &mut stderr.lock()),
        standard,
    )
}
