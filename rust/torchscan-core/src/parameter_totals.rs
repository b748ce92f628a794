//! The parameters under each module of a model: its own and those of every module under it.
//!
//! A layer's own parameters are counted once across a whole report (at the first layer that
//! holds them), so a container's own count is usually 0. What a reader of a container row wants
//! is the total under it: every module below it by module path, called in the forward or not,
//! each storage element once (a tied weight inside the subtree counts once, as it does among the
//! model's totals). The compiled crawl path (`torchscan-crawl`) reads the modules and tensors
//! from Python objects; the graph and the sums live here, tested without Python.
//!
//! Most models share no storage and list every module once: then the total under a module is
//! its own count plus its children's totals, one post-order pass. Otherwise (a tied weight, a
//! module under two paths) each total is the union of the tensors under the module, counted by
//! the caller's storage walk.

use std::collections::HashMap;

/// Parameter elements split by whether they require grad, and the bytes of their storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParameterCount {
    /// Elements of parameters that require grad.
    pub trainable: u64,
    /// Elements of parameters that do not require grad.
    pub frozen: u64,
    /// Bytes of their storage.
    pub bytes: u64,
}

impl ParameterCount {
    /// Adds `other` (saturating: a count never wraps).
    pub fn add(&mut self, other: &ParameterCount) {
        self.trainable = self.trainable.saturating_add(other.trainable);
        self.frozen = self.frozen.saturating_add(other.frozen);
        self.bytes = self.bytes.saturating_add(other.bytes);
    }

    /// Trainable and frozen elements together.
    pub fn elements(&self) -> u64 {
        self.trainable.saturating_add(self.frozen)
    }
}

/// The modules directly under each module, from a listing of `(path, module)` pairs in which
/// a module reachable under several paths is listed under each (`named_modules` with
/// `remove_duplicate=False`); modules are numbered `0..modules`.
///
/// A module's parent is the module at its path less the last component (or, when that path is
/// not listed, the nearest listed one above it); `""` is the root's path. Each child is listed
/// once per parent, in the order first listed; a pair naming a module outside `0..modules` is
/// ignored.
pub fn module_children(listing: &[(&str, usize)], modules: usize) -> Vec<Vec<usize>> {
    let mut at_path: HashMap<&str, usize> = HashMap::with_capacity(listing.len());
    for &(path, module) in listing {
        if module < modules {
            at_path.entry(path).or_insert(module);
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); modules];
    let mut listed = vec![false; modules];
    for &(path, module) in listing {
        if module >= modules {
            continue;
        }
        let again = std::mem::replace(&mut listed[module], true);
        if path.is_empty() {
            continue;
        }
        let mut above = path;
        let parent = loop {
            above = match above.rsplit_once('.') {
                Some((head, _)) => head,
                None if above.is_empty() => break None,
                None => "",
            };
            if let Some(&parent) = at_path.get(above) {
                break Some(parent);
            }
        };
        let Some(parent) = parent.filter(|&parent| parent != module) else {
            continue;
        };
        // A module listed for the first time has no parent yet: only a repeat can duplicate.
        if !again || !children[parent].contains(&module) {
            children[parent].push(module);
        }
    }
    children
}

/// The parameters under every module that has children (`None` for the others, whose total is
/// their own count).
///
/// `children[module]` are the modules directly under `module` ([`module_children`]);
/// `tensors[module]` are its own parameters and buffers, as positions in the model's list of
/// distinct tensors (the order the model's totals count them in). `alone[position]` is what
/// that tensor adds to the model's totals (nothing for a buffer). `shared_storage` says whether
/// some distinct tensors share storage, so that what one adds depends on which others are
/// counted. `union(positions)` counts the tensors at `positions` (increasing, each once)
/// together, each storage element once, as the model's totals count all of them.
///
/// When storage is not shared, every tensor belongs to one module and every module to at most
/// one parent, a total is the module's own count plus its children's totals. Otherwise each
/// total is the `union` of the tensors of the modules reachable from it.
pub fn totals_under(
    children: &[Vec<usize>],
    tensors: &[Vec<usize>],
    alone: &[ParameterCount],
    shared_storage: bool,
    mut union: impl FnMut(&[usize]) -> ParameterCount,
) -> Vec<Option<ParameterCount>> {
    let modules = children.len().min(tensors.len());
    if !shared_storage
        && let Some(order) = forest_post_order(children, modules)
        && each_tensor_once(tensors, alone.len(), modules)
    {
        let mut totals: Vec<ParameterCount> = vec![ParameterCount::default(); modules];
        for module in order {
            let mut total = ParameterCount::default();
            for &position in &tensors[module] {
                if let Some(count) = alone.get(position) {
                    total.add(count);
                }
            }
            for &child in &children[module] {
                total.add(&totals[child]);
            }
            totals[module] = total;
        }
        return totals
            .into_iter()
            .enumerate()
            .map(|(module, total)| (!children[module].is_empty()).then_some(total))
            .collect();
    }
    // The general walk: each module with children, the tensors reachable from it.
    let mut module_seen: Vec<usize> = vec![usize::MAX; modules];
    let mut tensor_seen: Vec<usize> = vec![usize::MAX; alone.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    (0..modules)
        .map(|top| {
            if children[top].is_empty() {
                return None;
            }
            positions.clear();
            stack.push(top);
            module_seen[top] = top;
            while let Some(module) = stack.pop() {
                for &position in &tensors[module] {
                    if let Some(seen) = tensor_seen.get_mut(position)
                        && *seen != top
                    {
                        *seen = top;
                        positions.push(position);
                    }
                }
                for &child in &children[module] {
                    if child < modules && module_seen[child] != top {
                        module_seen[child] = top;
                        stack.push(child);
                    }
                }
            }
            positions.sort_unstable();
            Some(union(&positions))
        })
        .collect()
}

/// The modules, children before their parent, when every module has at most one parent and
/// none lies under itself; `None` otherwise.
fn forest_post_order(children: &[Vec<usize>], modules: usize) -> Option<Vec<usize>> {
    let mut has_parent = vec![false; modules];
    for module_children in &children[..modules] {
        for &child in module_children {
            if child >= modules || std::mem::replace(&mut has_parent[child], true) {
                return None;
            }
        }
    }
    let mut order = Vec::with_capacity(modules);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in (0..modules).filter(|&module| !has_parent[module]) {
        stack.push((root, 0));
        while let Some((module, next)) = stack.pop() {
            if let Some(&child) = children[module].get(next) {
                stack.push((module, next + 1));
                stack.push((child, 0));
            } else {
                order.push(module);
            }
        }
    }
    // A cycle has no root: its modules were never reached.
    (order.len() == modules).then_some(order)
}

/// Whether each of the `count` tensors is listed by one module at most.
fn each_tensor_once(tensors: &[Vec<usize>], count: usize, modules: usize) -> bool {
    let mut listed = vec![false; count];
    tensors[..modules]
        .iter()
        .flatten()
        .all(|&position| position < count && !std::mem::replace(&mut listed[position], true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// A test tensor: the storage elements it covers and whether it requires grad (`None` for a
    /// buffer); 4 bytes per element.
    #[derive(Clone, Debug)]
    struct Tensor {
        elements: BTreeSet<u64>,
        trainable: Option<bool>,
    }

    fn parameter(range: std::ops::Range<u64>, trainable: bool) -> Tensor {
        Tensor {
            elements: range.collect(),
            trainable: Some(trainable),
        }
    }

    fn buffer(range: std::ops::Range<u64>) -> Tensor {
        Tensor {
            elements: range.collect(),
            trainable: None,
        }
    }

    /// What the tensors at `positions` count together, each element once at the first tensor
    /// that covers it (the order of the model's totals).
    fn union_of(all: &[Tensor], positions: &[usize]) -> ParameterCount {
        let mut covered: BTreeSet<u64> = BTreeSet::new();
        let mut count = ParameterCount::default();
        for &position in positions {
            let tensor = &all[position];
            let new = tensor
                .elements
                .iter()
                .filter(|element| covered.insert(**element))
                .count() as u64;
            match tensor.trainable {
                Some(true) => count.trainable += new,
                Some(false) => count.frozen += new,
                None => continue,
            }
            count.bytes += 4 * new;
        }
        count
    }

    /// What each tensor adds to the model's totals.
    fn alone_of(all: &[Tensor]) -> Vec<ParameterCount> {
        let everything: Vec<usize> = (0..all.len()).collect();
        (0..all.len())
            .map(|position| {
                let before = union_of(all, &everything[..position]);
                let after = union_of(all, &everything[..=position]);
                ParameterCount {
                    trainable: after.trainable - before.trainable,
                    frozen: after.frozen - before.frozen,
                    bytes: after.bytes - before.bytes,
                }
            })
            .collect()
    }

    fn shares_storage(all: &[Tensor]) -> bool {
        all.iter().enumerate().any(|(position, tensor)| {
            all[..position]
                .iter()
                .any(|earlier| !earlier.elements.is_disjoint(&tensor.elements))
        })
    }

    /// The totals, each checked against the union computed by hand.
    fn totals(
        listing: &[(&str, usize)],
        modules: usize,
        tensors: &[Vec<usize>],
        all: &[Tensor],
    ) -> Vec<Option<ParameterCount>> {
        let children = module_children(listing, modules);
        let alone = alone_of(all);
        totals_under(
            &children,
            tensors,
            &alone,
            shares_storage(all),
            |positions| union_of(all, positions),
        )
    }

    fn count(trainable: u64, frozen: u64) -> Option<ParameterCount> {
        Some(ParameterCount {
            trainable,
            frozen,
            bytes: 4 * (trainable + frozen),
        })
    }

    #[test]
    fn children_follow_the_paths() {
        let listing = [("", 0), ("a", 1), ("a.0", 2), ("a.1", 3), ("b", 4)];
        assert_eq!(
            module_children(&listing, 5),
            vec![vec![1, 4], vec![2, 3], vec![], vec![], vec![]]
        );
    }

    #[test]
    fn a_module_under_two_paths_is_a_child_of_both_parents_once() {
        // `shared` is `a.s` and `b.s`, and twice under `a` (`a.s`, `a.t`).
        let listing = [
            ("", 0),
            ("a", 1),
            ("a.s", 3),
            ("a.s.w", 4),
            ("a.t", 3),
            ("a.t.w", 4),
            ("b", 2),
            ("b.s", 3),
            ("b.s.w", 4),
        ];
        assert_eq!(
            module_children(&listing, 5),
            vec![vec![1, 2], vec![3], vec![3], vec![4], vec![]]
        );
    }

    #[test]
    fn a_path_whose_parent_is_not_listed_hangs_from_the_nearest_listed_one() {
        let listing = [("", 0), ("x.y.z", 1), ("zz", 9)];
        assert_eq!(module_children(&listing, 2), vec![vec![1], vec![]]);
        // Without a root nothing hangs from it.
        assert_eq!(module_children(&[("a.b", 0)], 1), vec![Vec::<usize>::new()]);
    }

    #[test]
    fn a_tree_without_sharing_sums_its_children() {
        // root -> (block -> (conv 448, conv 2,320), relu), head 170 frozen
        let listing = [
            ("", 0),
            ("block", 1),
            ("block.0", 2),
            ("block.1", 3),
            ("relu", 4),
            ("head", 5),
        ];
        let all = vec![
            parameter(0..432, true),
            parameter(432..448, true),
            parameter(1000..3304, true),
            parameter(3304..3320, true),
            parameter(5000..5160, false),
            parameter(5160..5170, false),
            buffer(9000..9100),
        ];
        let tensors = vec![vec![6], vec![], vec![0, 1], vec![2, 3], vec![], vec![4, 5]];
        let found = totals(&listing, 6, &tensors, &all);
        assert_eq!(
            found,
            vec![count(2768, 170), count(2768, 0), None, None, None, None]
        );
    }

    #[test]
    fn the_fast_sum_and_the_union_agree_without_sharing() {
        let listing = [("", 0), ("a", 1), ("a.0", 2), ("b", 3)];
        let all = vec![
            parameter(0..10, true),
            parameter(10..30, false),
            parameter(30..31, true),
        ];
        let tensors = vec![vec![2], vec![], vec![0], vec![1]];
        let children = module_children(&listing, 4);
        let alone = alone_of(&all);
        let mut unions = 0;
        let fast = totals_under(&children, &tensors, &alone, false, |positions| {
            unions += 1;
            union_of(&all, positions)
        });
        assert_eq!(unions, 0, "no sharing: one post-order pass");
        let slow = totals_under(&children, &tensors, &alone, true, |positions| {
            union_of(&all, positions)
        });
        assert_eq!(fast, slow);
        assert_eq!(fast, vec![count(11, 20), count(10, 0), None, None]);
    }

    #[test]
    fn a_tied_weight_counts_once_under_a_module_holding_both_ends() {
        // embed.weight is head.weight: under the root once; the decoder holds one end.
        let listing = [("", 0), ("embed", 1), ("decoder", 2), ("decoder.head", 3)];
        let all = vec![parameter(0..1600, true), parameter(1600..1700, true)];
        let tensors = vec![vec![], vec![0], vec![], vec![0, 1]];
        let found = totals(&listing, 4, &tensors, &all);
        assert_eq!(found, vec![count(1700, 0), None, count(1700, 0), None]);
    }

    #[test]
    fn overlapping_views_count_each_element_once() {
        // A transposed tie: two tensors over the same 512 elements, and a half view of them.
        let listing = [("", 0), ("a", 1), ("a.0", 2), ("a.1", 3), ("b", 4)];
        let all = vec![
            parameter(0..512, true),
            parameter(0..512, true),
            parameter(0..256, false),
        ];
        let tensors = vec![vec![], vec![], vec![0], vec![1], vec![2]];
        let found = totals(&listing, 5, &tensors, &all);
        assert_eq!(found, vec![count(512, 0), count(512, 0), None, None, None]);
    }

    #[test]
    fn a_module_under_two_paths_counts_once_in_a_common_ancestor() {
        let listing = [
            ("", 0),
            ("enc", 1),
            ("enc.block", 3),
            ("dec", 2),
            ("dec.block", 3),
            ("dec.out", 4),
        ];
        let all = vec![parameter(0..100, true), parameter(100..110, false)];
        let tensors = vec![vec![], vec![], vec![], vec![0], vec![1]];
        let found = totals(&listing, 5, &tensors, &all);
        assert_eq!(
            found,
            vec![count(100, 10), count(100, 0), count(100, 10), None, None]
        );
    }

    #[test]
    fn a_split_between_trainable_and_frozen_follows_the_order_of_the_totals() {
        // A frozen tensor and a trainable view of the same storage: the model counts the
        // storage as frozen (first), the module holding only the view as trainable.
        let listing = [("", 0), ("frozen", 1), ("tuned", 2), ("tuned.0", 3)];
        let all = vec![parameter(0..64, false), parameter(0..64, true)];
        let tensors = vec![vec![], vec![0], vec![], vec![1]];
        let found = totals(&listing, 4, &tensors, &all);
        assert_eq!(found, vec![count(0, 64), None, count(64, 0), None]);
    }

    #[test]
    fn buffers_count_no_parameters_but_can_hide_their_storage() {
        // A buffer viewing a parameter's storage, counted first: the model's totals give the
        // parameter only what the buffer does not cover, and so does the root's total.
        let listing = [("", 0), ("a", 1), ("b", 2)];
        let all = vec![buffer(0..10), parameter(0..30, true)];
        let tensors = vec![vec![], vec![0], vec![1]];
        let alone = alone_of(&all);
        let found = totals(&listing, 3, &tensors, &all);
        assert_eq!(found, vec![count(20, 0), None, None]);
        let mut model = ParameterCount::default();
        alone.iter().for_each(|tensor| model.add(tensor));
        assert_eq!(found[0], Some(model));
    }

    #[test]
    fn a_cycle_does_not_loop() {
        let children = vec![vec![1], vec![0]];
        let tensors = vec![vec![0], vec![1]];
        let all = vec![parameter(0..2, true), parameter(2..5, true)];
        let alone = alone_of(&all);
        let found = totals_under(&children, &tensors, &alone, false, |positions| {
            union_of(&all, positions)
        });
        assert_eq!(found, vec![count(5, 0), count(5, 0)]);
    }

    /// A random module tree (each module's parent before it), a few modules listed again under
    /// a second parent, and tensors over a small storage so that some overlap.
    #[allow(clippy::type_complexity)]
    fn model() -> impl Strategy<
        Value = (
            Vec<Option<usize>>,
            Vec<(usize, usize)>,
            Vec<Tensor>,
            Vec<(usize, Option<usize>)>,
        ),
    > {
        (1usize..12)
            .prop_flat_map(|modules| {
                let parents = (0..modules)
                    .map(|module| {
                        if module == 0 {
                            Just(None).boxed()
                        } else {
                            (0..module).prop_map(Some).boxed()
                        }
                    })
                    .collect::<Vec<_>>();
                let extra = proptest::collection::vec((0..modules, 0..modules), 0..3);
                let tensors = proptest::collection::vec(
                    (0u64..40, 1u64..10, proptest::option::of(any::<bool>())),
                    0..10,
                );
                // Each tensor's module, and for some a second module holding it too (a tie).
                let owners = proptest::collection::vec(
                    (0..modules, proptest::option::weighted(0.2, 0..modules)),
                    10,
                );
                (parents, extra, tensors, owners)
            })
            .prop_map(|(parents, extra, tensors, owners)| {
                let tensors = tensors
                    .into_iter()
                    .map(|(start, length, trainable)| Tensor {
                        elements: (start..start + length).collect(),
                        trainable,
                    })
                    .collect();
                (parents, extra, tensors, owners)
            })
    }

    /// Every path of `module` in a tree given by parents plus extra `(parent, child)` edges
    /// (a child under a later parent only, so that nothing lies under itself).
    fn paths(
        parents: &[Option<usize>],
        extra: &[(usize, usize)],
        module: usize,
        depth: usize,
    ) -> Vec<String> {
        if depth > 16 {
            return Vec::new();
        }
        let mut above: Vec<usize> = parents[module].into_iter().collect();
        above.extend(
            extra
                .iter()
                .filter(|(parent, child)| *child == module && parent < child)
                .map(|(parent, _)| *parent),
        );
        if module == 0 {
            return vec![String::new()];
        }
        let mut found = Vec::new();
        for parent in above {
            for path in paths(parents, extra, parent, depth + 1) {
                let name = format!("m{module}");
                found.push(if path.is_empty() {
                    name
                } else {
                    format!("{path}.{name}")
                });
            }
        }
        found
    }

    proptest! {
        #[test]
        fn every_total_is_the_union_of_the_tensors_under_the_module(
            (parents, extra, all, owners) in model()
        ) {
            let modules = parents.len();
            let mut listing_owned: Vec<(String, usize)> = Vec::new();
            for module in 0..modules {
                for path in paths(&parents, &extra, module, 0) {
                    listing_owned.push((path, module));
                }
            }
            let listing: Vec<(&str, usize)> =
                listing_owned.iter().map(|(path, module)| (path.as_str(), *module)).collect();
            let mut tensors: Vec<Vec<usize>> = vec![Vec::new(); modules];
            for (position, (owner, second)) in owners.iter().take(all.len()).enumerate() {
                tensors[*owner].push(position);
                if let Some(second) = second.filter(|second| second != owner) {
                    tensors[second].push(position);
                }
            }
            let found = totals(&listing, modules, &tensors, &all);
            // The oracle: the modules under each one by path prefix, their tensors' union.
            prop_assert_eq!(found.len(), modules);
            for (module, total) in found.iter().enumerate() {
                let own_paths = paths(&parents, &extra, module, 0);
                let mut under: BTreeSet<usize> = BTreeSet::new();
                let mut has_children = false;
                for (path, other) in &listing {
                    let inside = own_paths.iter().any(|own| {
                        own.is_empty() || path == own || path.starts_with(&format!("{own}."))
                    });
                    if inside {
                        under.insert(*other);
                        has_children |= !own_paths.iter().any(|own| own == path);
                    }
                }
                let positions: BTreeSet<usize> =
                    under.iter().flat_map(|other| tensors[*other].iter().copied()).collect();
                let positions: Vec<usize> = positions.into_iter().collect();
                let expected = has_children.then(|| union_of(&all, &positions));
                prop_assert_eq!(*total, expected, "module {}", module);
            }
            let everything: Vec<usize> = (0..all.len()).collect();
            if modules > 1 {
                prop_assert_eq!(found[0], Some(union_of(&all, &everything)));
            }
        }
    }
}
