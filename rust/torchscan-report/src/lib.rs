//! The `torchscan-report` command line over torchscan-core: saved reports are validated,
//! summarised and described without Python and without rerunning anything.
//!
//! Exit codes: 0 success, 1 invalid input, 2 usage (bad arguments or unreadable files).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use torchscan_core::{Problem, format_summary, json_schema_text, read_report};

/// Exit code: everything succeeded.
pub const EXIT_OK: i32 = 0;
/// Exit code: an input report is invalid.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: bad arguments or an unreadable file.
pub const EXIT_USAGE: i32 = 2;

const AFTER_HELP: &str = "\
Examples:
  torchscan-report validate workload.json analysis.json
  torchscan-report summary workload.json
  cat workload.json | torchscan-report summary -
  torchscan-report schema > report.v1.schema.json

Exit codes: 0 ok, 1 invalid input, 2 usage.";

/// Validate, summarise and describe saved torchscan reports.
#[derive(Debug, Parser)]
#[command(name = "torchscan-report", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `torchscan-report`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check reports against schema version 1 and its invariants; print one line per problem.
    Validate {
        /// Report files (`-` reads standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Print the text summary of a report.
    Summary {
        /// Report file (`-` reads standard input).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the JSON Schema of report schema version 1.
    Schema,
}

/// Reads a file, or standard input for `-`.
fn read_input(path: &Path, stdin: &mut dyn Read) -> std::io::Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        stdin.read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

fn print_problems(out: &mut dyn Write, name: &str, problems: &[Problem]) -> std::io::Result<()> {
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
