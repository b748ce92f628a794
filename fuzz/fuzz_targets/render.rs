//! Fuzz target `render`: see `torchscan_core::fuzz_targets::render`.
#![no_main]

torchscan_fuzz::fuzz_binary!(torchscan_core::fuzz_targets::render);
