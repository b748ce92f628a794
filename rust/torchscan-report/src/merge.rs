//! `torchscan-report merge`: the `benchmark` reports of every rank of a distributed job merged by
//! the core into one `distributed_benchmark` report, exactly as `torchscan.merge_rank_reports`
//! merges them, written as JSON, text or HTML.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use torchscan_core::distributed::MergeFailure;
use torchscan_core::merge_json::{input_label, merge_rank_reports_json};
use torchscan_core::{format_summary, read_report, render_html};

use crate::compare::print_located_problems;
use crate::{
    EXIT_INVALID, EXIT_USAGE, Inputs, OutputFormat, display_name, is_stdin, print_problems,
    read_inputs, refuse_output_over_input, write_output,
};

/// The arguments of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The `benchmark` report of every rank, in any order (`-` reads standard input, once).
    #[arg(required = true, value_name = "RANK_REPORT")]
    pub files: Vec<PathBuf>,
    /// `json` (the `distributed_benchmark` report), `text` (its summary) or `html` (its
    /// self-contained page).
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    pub format: OutputFormat,
    /// Write the output to this file instead of standard output (`-`): a regular file is replaced
    /// atomically, a symlink, hard link, device or FIFO is written through.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Runs `merge` and returns its exit code.
pub fn merge(
    args: &MergeArgs,
    streams: (&mut Inputs<'_>, &mut dyn Write, &mut dyn Write),
) -> std::io::Result<i32> {
    let (inputs, stdout, stderr) = streams;
    if args.files.iter().filter(|path| is_stdin(path)).count() > 1 {
        writeln!(
            stderr,
            "torchscan-report: standard input (`-`) can be named only once"
        )?;
        return Ok(EXIT_USAGE);
    }
    let paths: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    if let Some(code) = refuse_output_over_input(args.output.as_deref(), &paths, inputs, stderr)? {
        return Ok(code);
    }
    let texts = match read_inputs(&paths, inputs, stderr)? {
        Ok(texts) => texts,
        Err(code) => return Ok(code),
    };
    let names: Vec<String> = paths.iter().map(|path| display_name(path)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let json = match merge_rank_reports_json(&refs) {
        Ok(json) => json,
        Err(MergeFailure::Invalid(problems)) => {
            let labelled: Vec<(String, String)> = names
                .iter()
                .enumerate()
                .map(|(index, name)| (input_label(index), name.clone()))
                .collect();
            print_located_problems(stderr, &problems, &labelled)?;
            return Ok(EXIT_INVALID);
        }
        Err(MergeFailure::Refused(error)) => {
            let named = error.describe(&|index| {
                names
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| input_label(index))
            });
            writeln!(
                stderr,
                "torchscan-report: cannot merge the rank reports: {named}"
            )?;
            return Ok(EXIT_INVALID);
        }
        Err(MergeFailure::Internal(problems)) => {
            writeln!(
                stderr,
                "torchscan-report: the merged report is not a valid report (a bug of torchscan):"
            )?;
            print_problems(stderr, "merged", &problems)?;
            return Ok(EXIT_INVALID);
        }
    };
    let text = match args.format {
        OutputFormat::Json => json,
        // The other formats read the core's JSON back, so all three show one report.
        OutputFormat::Text | OutputFormat::Html => {
            let report = match read_report(&json) {
                Ok(report) => report,
                Err(problems) => {
                    print_problems(stderr, "merged", &problems)?;
                    return Ok(EXIT_INVALID);
                }
            };
            if args.format == OutputFormat::Text {
                format_summary(&report)
            } else {
                match render_html(&report) {
                    Ok(html) => html,
                    Err(error) => {
                        writeln!(stderr, "torchscan-report: {error}")?;
                        return Ok(EXIT_INVALID);
                    }
                }
            }
        }
    };
    write_output(&text, args.output.as_deref(), stdout, stderr)
}
