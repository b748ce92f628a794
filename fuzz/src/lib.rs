//! The structure-aware mutator shared by the fuzz binaries, and the counts that show both of its
//! kinds of mutation run. The target bodies live in `torchscan_core::fuzz_targets` (the core's
//! `fuzzing` feature, which `Cargo.toml` enables), which the test
//! `rust/torchscan-core/tests/fuzz_corpus.rs` also runs on the kept corpus.

use std::sync::atomic::{AtomicU64, Ordering};

pub use libfuzzer_sys;
use torchscan_core::fuzz_targets::mutate::{MutationKind, mutate_documents};

static STRUCTURED: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// One mutation of the input in `data[..size]`, written back into `data`; returns its length.
///
/// Three times in four, an input that parses as JSON (each NUL-separated document on its own) has
/// one value changed at a random path ([`mutate_documents`]); otherwise, and for every input that
/// is not JSON, libFuzzer's own byte mutation runs. The counts of each kind are printed to
/// stderr at every power of two from 1,024 mutations on.
pub fn mutate(data: &mut [u8], size: usize, max_size: usize, seed: u32) -> usize {
    let mut kind = MutationKind::Bytes;
    let mut new_size = 0;
    if !seed.is_multiple_of(4) {
        let input = data.get(..size).unwrap_or_default();
        if let Some(mutated) = mutate_documents(input, u64::from(seed), max_size)
            && let Some(slot) = data.get_mut(..mutated.len())
        {
            slot.copy_from_slice(&mutated);
            new_size = mutated.len();
            kind = MutationKind::Structured;
        }
    }
    if kind == MutationKind::Bytes {
        new_size = libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    count(kind);
    new_size
}

fn count(kind: MutationKind) {
    let counter = match kind {
        MutationKind::Structured => &STRUCTURED,
        MutationKind::Bytes => &BYTES,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let structured = STRUCTURED.load(Ordering::Relaxed);
    let bytes = BYTES.load(Ordering::Relaxed);
    let total = structured + bytes;
    if total >= 1024 && total.is_power_of_two() {
        eprintln!("#mutations {total}: structured {structured}, bytes {bytes}");
    }
}

/// Defines one fuzz binary: `fuzz_target!` on the core's target body, and the custom mutator.
#[macro_export]
macro_rules! fuzz_binary {
    ($body:path) => {
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| $body(data));
        $crate::libfuzzer_sys::fuzz_mutator!(|data: &mut [u8],
                                              size: usize,
                                              max_size: usize,
                                              seed: u32| {
            $crate::mutate(data, size, max_size, seed)
        });
    };
}
