//! The `torchscan-report` binary.

fn main() {
    std::process::exit(torchscan_report::main_with_args(std::env::args_os()));
}
