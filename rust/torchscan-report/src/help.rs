//! The examples and exit codes printed after `--help`, one text per command.

/// After `torchscan-report --help`.
pub const MAIN: &str = "\
Examples:
  torchscan-report validate workload.json analysis.json
  torchscan-report summary workload.json
  cat workload.json | torchscan-report summary -
  torchscan-report schema > report.v1.schema.json
  torchscan-report diff before.json after.json
  torchscan-report diff before.json after.json --format json -o diff.json
  torchscan-report compare baseline.json candidate.json --check check.json
  torchscan-report merge rank0.json rank1.json -o job.json
  torchscan-report render workload.json -o workload.html

Exit codes: 0 ok, 1 invalid input (including a file that is not UTF-8 text or whose JSON value is
not an object), 2 usage (including standard input named twice, an input that cannot be read or is
larger than --max-input-bytes, an output that cannot be written, and an output that is the same
file as an input).
`diff` and `compare` also exit 1 when the two reports cannot be compared, `merge` when the rank
reports cannot be merged, and `compare` when a --fail-on gate fails.
Inputs larger than 1 GiB are refused; --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES changes the
limit. -o FILE replaces a regular file atomically (keeping its mode), writes through a symlink to
its target and through every hard link, and writes a device or FIFO directly. An output that
cannot be written, -o FILE or standard output alike (a full disk, a closed pipe, a read-only file
system, a missing directory, a directory), exits 2 with one line on standard error, and an
existing -o FILE keeps its old content. An output that is the same file as an input (by any path,
hard link or symlink, or standard output redirected into one) is refused before anything is read.";

/// After `torchscan-report validate --help`.
pub const VALIDATE: &str = "\
Examples:
  torchscan-report validate workload.json
  torchscan-report validate reports/*.json
  cat workload.json | torchscan-report validate -

Prints one line per problem (FILE: PATH: MESSAGE) on standard output and a count on standard
error.
Exit codes: 0 every file is valid, 1 a file is invalid (or not UTF-8 text), 2 usage (including
`-` named twice), a file that cannot be read or is larger than --max-input-bytes, or standard
output that cannot be written.";

/// After `torchscan-report summary --help`.
pub const SUMMARY: &str = "\
Examples:
  torchscan-report summary workload.json
  cat workload.json | torchscan-report summary -

Exit codes: 0 ok, 1 invalid report (its problems on standard error), 2 usage (including an input
that cannot be read and standard output that cannot be written).";

/// After `torchscan-report schema --help`.
pub const SCHEMA: &str = "\
Examples:
  torchscan-report schema > report.v1.schema.json

Exit codes: 0 ok, 2 usage (including standard output that cannot be written).";

/// After `torchscan-report diff --help`.
pub const DIFF: &str = "\
Examples:
  torchscan-report diff before.json after.json
  torchscan-report diff before.json after.json --format json -o diff.json
  torchscan-report diff before.json after.json --format html -o diff.html
  cat after.json | torchscan-report diff before.json -

Exit codes: 0 ok, 1 invalid input or reports that cannot be compared, 2 usage (including an
input that cannot be read and an output, -o FILE or standard output, that cannot be written).";

/// After `torchscan-report compare --help`.
pub const COMPARE: &str = "\
Examples:
  torchscan-report compare baseline.json candidate.json
  torchscan-report compare baseline.json candidate.json --check check.json
  torchscan-report compare baseline.json candidate.json --format json -o comparison.json
  torchscan-report compare baseline.json candidate.json --format html -o comparison.html
  torchscan-report compare baseline.json candidate.json --check check.json --fail-on slower,withheld
  cat candidate.json | torchscan-report compare baseline.json -

The comparison is the one torchscan.compare_benchmarks returns, with the same defaults: the same
reports and options give the same JSON, byte for byte. Two merged distributed jobs (the reports
of torchscan-report merge) are compared by their step time and job throughput; a benchmark and a
merged job are not compared.
Exit codes: 0 ok, 1 invalid input, reports that cannot be compared, or a verdict named by
--fail-on (the output is written first), 2 usage (including an out-of-range option, an input that
cannot be read and an output, -o FILE or standard output, that cannot be written).";

/// After `torchscan-report merge --help`.
pub const MERGE: &str = "\
Examples:
  torchscan-report merge rank0.json rank1.json
  torchscan-report merge reports/rank*.json -o job.json
  torchscan-report merge reports/rank*.json --format text
  torchscan-report merge reports/rank*.json --format html -o job.html
  torchscan-report compare job_before.json job_after.json

The merge is the one torchscan.merge_rank_reports returns: the same rank reports, in any order,
give the same JSON, byte for byte. It is refused (exit 1, the reason on standard error) when a
report is not a `benchmark` of a rank of a distributed job, when ranks are missing or given twice,
when the ranks' world sizes, backends, workloads, settings or aligned blocks differ, or when a
number of the merged report (a rank's summed barrier waits, the job's work units per call or its
throughput) is past the largest float.
Exit codes: 0 ok, 1 invalid input or rank reports that cannot be merged, 2 usage (including `-`
named twice, an input that cannot be read and an output, -o FILE or standard output, that cannot
be written).";

/// After `torchscan-report render --help`.
pub const RENDER: &str = "\
Examples:
  torchscan-report render workload.json -o workload.html
  cat workload.json | torchscan-report render - > workload.html

Exit codes: 0 ok, 1 invalid report (nothing written), 2 usage (including an input that cannot be
read and an output, -o FILE or standard output, that cannot be written).";
