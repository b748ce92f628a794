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
  torchscan-report render workload.json -o workload.html

Exit codes: 0 ok, 1 invalid input, 2 usage.
`diff` and `compare` also exit 1 when the two reports cannot be compared, and `compare` when a
--fail-on gate fails.";

/// After `torchscan-report validate --help`.
pub const VALIDATE: &str = "\
Examples:
  torchscan-report validate workload.json
  torchscan-report validate reports/*.json
  cat workload.json | torchscan-report validate -

Prints one line per problem (FILE: PATH: MESSAGE) on standard output and a count on standard
error.
Exit codes: 0 every file is valid, 1 a file is invalid, 2 usage or a file cannot be read.";

/// After `torchscan-report summary --help`.
pub const SUMMARY: &str = "\
Examples:
  torchscan-report summary workload.json
  cat workload.json | torchscan-report summary -

Exit codes: 0 ok, 1 invalid report (its problems on standard error), 2 usage.";

/// After `torchscan-report schema --help`.
pub const SCHEMA: &str = "\
Examples:
  torchscan-report schema > report.v1.schema.json

Exit codes: 0 ok, 2 usage.";

/// After `torchscan-report diff --help`.
pub const DIFF: &str = "\
Examples:
  torchscan-report diff before.json after.json
  torchscan-report diff before.json after.json --format json -o diff.json
  torchscan-report diff before.json after.json --format html -o diff.html
  cat after.json | torchscan-report diff before.json -

Exit codes: 0 ok, 1 invalid input or reports that cannot be compared, 2 usage (including an
output file that cannot be written).";

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
reports and options give the same JSON, byte for byte.
Exit codes: 0 ok, 1 invalid input, reports that cannot be compared, or a verdict named by
--fail-on (the output is written first), 2 usage (including an out-of-range option or an output
file that cannot be written).";

/// After `torchscan-report render --help`.
pub const RENDER: &str = "\
Examples:
  torchscan-report render workload.json -o workload.html
  cat workload.json | torchscan-report render - > workload.html

Exit codes: 0 ok, 1 invalid report (nothing written), 2 usage (including an output file that
cannot be written).";
