//! Fuzz target `diff`: see `torchscan_core::fuzz_targets::diff`.
#![no_main]

torchscan_fuzz::fuzz_binary!(torchscan_core::fuzz_targets::diff);
