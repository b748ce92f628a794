//! How tensors that are views of one storage cover it: each storage element counted once.
//!
//! A model's parameters and buffers may share storage: the same tensor under two names, a
//! transposed view tied to a weight (`Parameter(w.data.t())`), or disjoint slices of one flat
//! buffer (as FSDP and DeepSpeed keep parameters). A view covers the storage elements its sizes
//! and strides reach from its offset; [`cover`] works out, for views of one storage taken in
//! order, the bytes each covers, the bytes it covers first (no earlier view covers them), and
//! which views overlap, directly or through others. The union is exact: a transposed view covers
//! the same elements as the tensor it views, a view of every other element covers half of them,
//! an expanded view (stride 0) covers its elements once, and disjoint slices cover their sum.
//!
//! The work is a sweep over the views' runs (stretches of contiguous bytes) in storage order:
//! time proportional to the runs times the logarithm of the number of views, memory
//! proportional to the number of views, except for a view that overlaps itself (other than
//! through stride 0), whose runs are listed and sorted.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Where one tensor's elements lie in its storage, as torch describes a strided tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// Offset of the first element in the storage, in elements (`storage_offset()`).
    pub offset: u64,
    /// The size of each dimension (`shape`).
    pub sizes: Vec<u64>,
    /// The stride of each dimension, in elements (`stride()`); one per size.
    pub strides: Vec<u64>,
    /// Bytes per element (`element_size()`).
    pub itemsize: u64,
}

/// What [`cover`] found for one view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Covered {
    /// Distinct storage bytes the view covers (its elements times the item size unless it
    /// covers some element more than once, as an expanded view does).
    pub bytes: u64,
    /// Bytes the view covers that no earlier view covers: summed over the views, the bytes of
    /// the storage they cover together, each counted once.
    pub first_bytes: u64,
    /// The position of the first view of its overlap group: views that share a storage byte
    /// are in one group, and so are views linked through others. A view that overlaps no other
    /// view is a group of its own (its own position).
    pub group: usize,
}

impl Covered {
    /// The elements the view covers first: [`Covered::first_bytes`] in the view's item size.
    pub fn first_elements(&self, view: &View) -> u64 {
        self.first_bytes.checked_div(view.itemsize).unwrap_or(0)
    }
}

/// The runs of one view in increasing storage order, as `(start, end)` byte ranges.
enum Runs {
    /// Runs of `run` bytes from `base`, at every combination of the outer dimensions
    /// (`(size, stride in bytes)`, smallest stride first): increasing and disjoint.
    Regular {
        base: u64,
        run: u64,
        dims: Vec<(u64, u64)>,
        index: Vec<u64>,
        done: bool,
    },
    /// The runs of a view that overlaps itself, sorted and merged.
    Listed { runs: Vec<(u64, u64)>, next: usize },
}

impl Runs {
    /// The runs of `view` and the distinct bytes they cover.
    fn of(view: &View) -> (Runs, u64) {
        let itemsize = view.itemsize;
        let empty = (
            Runs::Listed {
                runs: Vec::new(),
                next: 0,
            },
            0,
        );
        if itemsize == 0 || view.sizes.contains(&0) {
            return empty;
        }
        // Dimensions of size 1 move nowhere; those of stride 0 repeat the same elements.
        let mut dims: Vec<(u64, u64)> = view
            .sizes
            .iter()
            .zip(view.strides.iter())
            .filter(|&(&size, &stride)| size > 1 && stride > 0)
            .map(|(&size, &stride)| (size, stride))
            .collect();
        dims.sort_by_key(|&(size, stride)| (stride, size));
        // The innermost contiguous dimensions make one run.
        let mut run: u64 = 1;
        let mut first_outer = 0;
        for &(size, stride) in &dims {
            if stride != run {
                break;
            }
            run = run.saturating_mul(size);
            first_outer += 1;
        }
        let outer: Vec<(u64, u64)> = dims[first_outer..].to_vec();
        // Runs come out increasing and disjoint when every stride passes all that the smaller
        // ones reach.
        let mut extent = run;
        let mut nested = true;
        for &(size, stride) in &outer {
            if stride < extent {
                nested = false;
                break;
            }
            extent = stride.saturating_mul(size - 1).saturating_add(extent);
        }
        let base = view.offset.saturating_mul(itemsize);
        let run_bytes = run.saturating_mul(itemsize);
        let count = outer
            .iter()
            .fold(1_u64, |count, &(size, _)| count.saturating_mul(size));
        let outer_bytes: Vec<(u64, u64)> = outer
            .iter()
            .map(|&(size, stride)| (size, stride.saturating_mul(itemsize)))
            .collect();
        if nested {
            let index = vec![0; outer_bytes.len()];
            let runs = Runs::Regular {
                base,
                run: run_bytes,
                dims: outer_bytes,
                index,
                done: false,
            };
            return (runs, count.saturating_mul(run_bytes));
        }
        // A view that overlaps itself: every run listed, then sorted and merged.
        let mut listed = Vec::new();
        let mut walk = Runs::Regular {
            base,
            run: run_bytes,
            dims: outer_bytes,
            index: vec![0; outer.len()],
            done: false,
        };
        while let Some(found) = walk.next_run() {
            listed.push(found);
        }
        listed.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(listed.len());
        for (start, end) in listed {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let bytes = merged.iter().map(|&(start, end)| end - start).sum();
        (
            Runs::Listed {
                runs: merged,
                next: 0,
            },
            bytes,
        )
    }

    /// The next run, or `None` after the last.
    fn next_run(&mut self) -> Option<(u64, u64)> {
        match self {
            Runs::Listed { runs, next } => {
                let found = runs.get(*next).copied();
                *next += 1;
                found
            }
            Runs::Regular {
                base,
                run,
                dims,
                index,
                done,
            } => {
                if *done {
                    return None;
                }
                let start = dims
                    .iter()
                    .zip(index.iter())
                    .fold(*base, |start, (&(_, stride), &i)| {
                        start.saturating_add(stride.saturating_mul(i))
                    });
                // Advance the odometer, smallest stride first.
                *done = true;
                for (position, &(size, _)) in dims.iter().enumerate() {
                    index[position] += 1;
                    if index[position] < size {
                        *done = false;
                        break;
                    }
                    index[position] = 0;
                }
                Some((start, start.saturating_add(*run)))
            }
        }
    }
}

/// The root of `item` in a union-find forest whose roots are the smallest positions.
fn root(parents: &mut [usize], item: usize) -> usize {
    let mut top = item;
    while parents[top] != top {
        top = parents[top];
    }
    let mut current = item;
    while parents[current] != top {
        let next = parents[current];
        parents[current] = top;
        current = next;
    }
    top
}

fn join(parents: &mut [usize], a: usize, b: usize) {
    let (a, b) = (root(parents, a), root(parents, b));
    if a != b {
        let (low, high) = if a < b { (a, b) } else { (b, a) };
        parents[high] = low;
    }
}

/// How `views` of one storage cover it, one [`Covered`] per view, in order: a byte covered by
/// several views is counted first by the earliest of them.
pub fn cover(views: &[View]) -> Vec<Covered> {
    let mut parents: Vec<usize> = (0..views.len()).collect();
    let mut own = Vec::with_capacity(views.len());
    let mut first = vec![0_u64; views.len()];
    let mut walks = Vec::with_capacity(views.len());
    // The next run of every view, smallest start first (then earliest view).
    let mut pending: BinaryHeap<Reverse<(u64, usize, u64)>> = BinaryHeap::new();
    for (position, view) in views.iter().enumerate() {
        let (mut runs, bytes) = Runs::of(view);
        own.push(bytes);
        if let Some((start, end)) = runs.next_run() {
            pending.push(Reverse((start, position, end)));
        }
        walks.push(runs);
    }
    // The runs open at the sweep's position, by view: at most one per view, as a view's own
    // runs are disjoint. The earliest view among them owns the bytes until its run ends.
    let mut open: BTreeMap<usize, u64> = BTreeMap::new();
    let mut position: u64 = 0;
    // The run reaching furthest so far: a new run that starts before its end overlaps it.
    let mut furthest: Option<(u64, usize)> = None;
    loop {
        let next = pending.pop();
        let target = next.map_or(u64::MAX, |Reverse((start, _, _))| start);
        while position < target {
            let Some((&owner, &end)) = open.first_key_value() else {
                position = target;
                break;
            };
            if end <= position {
                open.remove(&owner);
                continue;
            }
            let until = end.min(target);
            first[owner] += until - position;
            position = until;
        }
        let Some(Reverse((start, view, end))) = next else {
            break;
        };
        match furthest {
            Some((reach, other)) if reach > start => {
                join(&mut parents, view, other);
                if end > reach {
                    furthest = Some((end, view));
                }
            }
            _ => furthest = Some((end, view)),
        }
        // The view's previous run ended by `start`: its runs are disjoint and increasing.
        open.insert(view, end);
        if let Some((start, end)) = walks[view].next_run() {
            pending.push(Reverse((start, view, end)));
        }
    }
    (0..views.len())
        .map(|position| Covered {
            bytes: own[position],
            first_bytes: first[position],
            group: root(&mut parents, position),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(offset: u64, sizes: &[u64], strides: &[u64]) -> View {
        View {
            offset,
            sizes: sizes.to_vec(),
            strides: strides.to_vec(),
            itemsize: 4,
        }
    }

    /// The union by brute force: every element's bytes, in order of the views.
    fn by_hand(views: &[View]) -> Vec<(u64, u64)> {
        let mut seen = std::collections::HashSet::new();
        views
            .iter()
            .map(|v| {
                let mut own = std::collections::HashSet::new();
                let total: u64 = v.sizes.iter().product();
                for flat in 0..total {
                    let mut rest = flat;
                    let mut element = v.offset;
                    for (size, stride) in v.sizes.iter().zip(&v.strides).rev() {
                        element += (rest % size) * stride;
                        rest /= size;
                    }
                    for byte in element * v.itemsize..(element + 1) * v.itemsize {
                        own.insert(byte);
                    }
                }
                let first = own.iter().filter(|b| seen.insert(**b)).count() as u64;
                (own.len() as u64, first)
            })
            .collect()
    }

    fn bytes(views: &[View]) -> Vec<(u64, u64)> {
        cover(views)
            .iter()
            .map(|c| (c.bytes, c.first_bytes))
            .collect()
    }

    #[test]
    fn a_transposed_tie_covers_the_same_elements_once() {
        let views = [view(0, &[16, 32], &[32, 1]), view(0, &[32, 16], &[1, 32])];
        let found = cover(&views);
        assert_eq!(found[0].first_elements(&views[0]), 512);
        assert_eq!(found[1].first_elements(&views[1]), 0);
        assert_eq!((found[0].bytes, found[1].bytes), (2048, 2048));
        assert_eq!((found[0].group, found[1].group), (0, 0));
    }

    #[test]
    fn disjoint_slices_of_a_flat_buffer_count_in_full() {
        let views = [
            view(0, &[4, 3], &[3, 1]),
            view(12, &[5], &[1]),
            view(17, &[2, 2], &[2, 1]),
        ];
        assert_eq!(bytes(&views), vec![(48, 48), (20, 20), (16, 16)]);
        let groups: Vec<usize> = cover(&views).iter().map(|c| c.group).collect();
        assert_eq!(groups, vec![0, 1, 2]);
    }

    #[test]
    fn partly_overlapping_slices_count_their_union() {
        // Elements 0..300 and 200..500: 500 distinct (300 + 200), 100 shared.
        let views = [view(0, &[300], &[1]), view(200, &[300], &[1])];
        assert_eq!(bytes(&views), vec![(1200, 1200), (1200, 800)]);
        assert_eq!(cover(&views)[1].group, 0);
    }

    #[test]
    fn every_other_element_covers_half() {
        let whole = view(0, &[8, 8], &[8, 1]);
        let even = view(0, &[8, 4], &[8, 2]);
        let odd = view(1, &[8, 4], &[8, 2]);
        assert_eq!(bytes(std::slice::from_ref(&even)), vec![(128, 128)]);
        // The odd and even halves do not overlap: two groups; the whole overlaps both.
        let found = cover(&[even.clone(), odd.clone()]);
        assert_eq!((found[0].group, found[1].group), (0, 1));
        assert_eq!(
            bytes(&[even.clone(), odd.clone()]),
            vec![(128, 128), (128, 128)]
        );
        let found = cover(&[even, odd, whole]);
        assert_eq!(
            found.iter().map(|c| c.first_bytes).collect::<Vec<_>>(),
            vec![128, 128, 0]
        );
        assert_eq!(
            found.iter().map(|c| c.group).collect::<Vec<_>>(),
            vec![0, 0, 0]
        );
    }

    #[test]
    fn an_expanded_view_covers_its_elements_once() {
        let expanded = view(0, &[3, 4], &[0, 1]);
        assert_eq!(bytes(std::slice::from_ref(&expanded)), vec![(16, 16)]);
        let base = view(0, &[4], &[1]);
        assert_eq!(bytes(&[base, expanded]), vec![(16, 16), (16, 0)]);
    }

    #[test]
    fn a_view_that_overlaps_itself_counts_each_element_once() {
        // Rows of 4 elements, 2 apart: elements 0..8, 3 x 4 = 12 listed.
        let sliding = view(0, &[3, 4], &[2, 1]);
        assert_eq!(bytes(std::slice::from_ref(&sliding)), vec![(32, 32)]);
    }

    #[test]
    fn the_same_view_twice_is_counted_at_the_first() {
        let views = [view(5, &[2, 3], &[3, 1]), view(5, &[2, 3], &[3, 1])];
        assert_eq!(bytes(&views), vec![(24, 24), (24, 0)]);
    }

    #[test]
    fn empty_views_cover_nothing_and_overlap_nothing() {
        let views = [view(0, &[0, 3], &[3, 1]), view(0, &[3], &[1])];
        let found = cover(&views);
        assert_eq!(bytes(&views), vec![(0, 0), (12, 12)]);
        assert_eq!((found[0].group, found[1].group), (0, 1));
        assert!(cover(&[]).is_empty());
    }

    #[test]
    fn a_chain_of_overlaps_is_one_group() {
        // 0..4 overlaps 3..7, which overlaps 6..10; 20..22 overlaps none.
        let views = [
            view(0, &[4], &[1]),
            view(20, &[2], &[1]),
            view(3, &[4], &[1]),
            view(6, &[4], &[1]),
        ];
        let groups: Vec<usize> = cover(&views).iter().map(|c| c.group).collect();
        assert_eq!(groups, vec![0, 1, 0, 0]);
        assert_eq!(bytes(&views), vec![(16, 16), (8, 8), (16, 12), (16, 12)]);
    }

    #[test]
    fn an_earlier_view_keeps_the_bytes_a_later_one_also_covers() {
        // The later view starts first in storage; the earlier still counts its bytes first.
        let views = [view(4, &[4], &[1]), view(0, &[8], &[1])];
        assert_eq!(bytes(&views), vec![(16, 16), (32, 16)]);
    }

    #[test]
    fn views_of_different_item_sizes_are_compared_by_bytes() {
        let floats = view(0, &[4], &[1]);
        let halves = View {
            offset: 4,
            sizes: vec![4],
            strides: vec![1],
            itemsize: 2,
        };
        // Bytes 0..16 and 8..16.
        assert_eq!(bytes(&[floats, halves]), vec![(16, 16), (8, 0)]);
    }

    #[test]
    fn the_sweep_agrees_with_brute_force_on_many_layouts() {
        let layouts = [
            view(0, &[6, 5], &[5, 1]),
            view(0, &[5, 6], &[1, 5]),
            view(3, &[3, 3], &[7, 2]),
            view(1, &[2, 2, 3], &[12, 1, 4]),
            view(10, &[4, 2], &[3, 1]),
            view(0, &[2, 3, 2], &[0, 9, 0]),
            view(2, &[5], &[6]),
            view(7, &[3, 3], &[1, 1]),
        ];
        for start in 0..layouts.len() {
            for length in 1..=layouts.len() - start {
                let chosen = &layouts[start..start + length];
                assert_eq!(bytes(chosen), by_hand(chosen), "{chosen:?}");
                let reversed: Vec<View> = chosen.iter().rev().cloned().collect();
                assert_eq!(bytes(&reversed), by_hand(&reversed), "{reversed:?}");
            }
        }
    }
}
