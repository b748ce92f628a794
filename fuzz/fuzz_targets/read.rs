//! Fuzz target `read`: see `torchscan_core::fuzz_targets::read`.
#![no_main]

torchscan_fuzz::fuzz_binary!(torchscan_core::fuzz_targets::read);
