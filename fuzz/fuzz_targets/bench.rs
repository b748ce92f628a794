//! Fuzz target `bench`: see `torchscan_core::fuzz_targets::bench`.
#![no_main]

torchscan_fuzz::fuzz_binary!(torchscan_core::fuzz_targets::bench);
