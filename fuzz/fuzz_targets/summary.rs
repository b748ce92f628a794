//! Fuzz target `summary`: see `torchscan_core::fuzz_targets::summary`.
#![no_main]

torchscan_fuzz::fuzz_binary!(torchscan_core::fuzz_targets::summary);
