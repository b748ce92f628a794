//! The call tree of an analysed forward: walks and per-path operator totals.
//!
//! An analysis records every module call with the call it ran inside (its parent) and the calls
//! it made (its children, in call order), and, in full mode, the operators each call ran itself.
//! A module's operator FLOPs are those of every call of its path, children included, each
//! operator once even when a call of a path runs inside another call of the same path (a
//! recursive module). The compiled crawl path (`torchscan-crawl`) builds the tree from Python
//! objects; the sums live here, tested without Python.

use std::collections::{BTreeSet, HashMap};

/// A call tree: calls numbered `0..len()`, each with its parent and its children in call order.
pub trait CallTree {
    /// Number of calls.
    fn len(&self) -> usize;
    /// Whether there is no call.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The call `call` ran inside, or `None` for a call made outside any other.
    fn parent(&self, call: usize) -> Option<usize>;
    /// The calls `call` made, in call order.
    fn children(&self, call: usize) -> &[usize];
}

/// Every call, children before their parent, siblings and roots in call order.
pub fn post_order<T: CallTree + ?Sized>(tree: &T) -> Vec<usize> {
    let mut ordered = Vec::with_capacity(tree.len());
    let mut stack: Vec<(usize, usize)> = (0..tree.len())
        .rev()
        .filter(|&call| tree.parent(call).is_none())
        .map(|call| (call, 0))
        .collect();
    while let Some((call, child)) = stack.pop() {
        if let Some(&next) = tree.children(call).get(child) {
            stack.push((call, child + 1));
            stack.push((next, 0));
        } else {
            ordered.push(call);
        }
    }
    ordered
}

/// What one call ran itself (not inside a child call).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnOperators {
    /// The identity of the call's module path: calls of one path share it.
    pub path: usize,
    /// Nesting in the call tree (0 for a call made outside any tracked module).
    pub level: usize,
    /// FLOPs of the operators it ran itself.
    pub flops: u128,
    /// Names of the operators without a formula it ran itself.
    pub uncounted: BTreeSet<String>,
    /// Position in the forward of the first operator it ran itself, if any.
    pub first_operator: Option<u64>,
}

/// Operator totals of one module path, children included.
#[derive(Clone, Debug, PartialEq)]
pub struct PathTotal {
    /// The path's identity ([`OwnOperators::path`]).
    pub path: usize,
    /// The first call of the path, in post order, that ran an operator.
    pub call: usize,
    /// FLOPs of the operators its calls ran, children included, each once.
    pub flops: u128,
    /// Names of the operators without a formula among them.
    pub uncounted: BTreeSet<String>,
}

/// Operator totals of every path whose calls ran an operator, in the order the forward first
/// ran an operator inside them, outer before inner (by level).
///
/// `own[call]` is what `call` ran itself; `order` is [`post_order`] of `tree`. A call nested in
/// a call of the same path adds nothing more: the outer call counts it already.
pub fn path_totals<T: CallTree + ?Sized>(
    tree: &T,
    own: &[OwnOperators],
    order: &[usize],
) -> Vec<PathTotal> {
    // Each call's subtree: FLOPs, uncounted names and first operator, children first.
    let mut flops = vec![0_u128; tree.len()];
    let mut names: Vec<BTreeSet<String>> = vec![BTreeSet::new(); tree.len()];
    let mut first: Vec<Option<u64>> = vec![None; tree.len()];
    for &call in order {
        let mut total = own[call].flops;
        let mut seen = own[call].uncounted.clone();
        let mut start = own[call].first_operator;
        for &child in tree.children(call) {
            total = total.saturating_add(flops[child]);
            seen.extend(names[child].iter().cloned());
            start = match (start, first[child]) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        flops[call] = total;
        names[call] = seen;
        first[call] = start;
    }
    let mut paths: Vec<((u64, usize), PathTotal)> = Vec::new();
    let mut index_of: HashMap<usize, usize> = HashMap::new();
    for &call in order {
        let Some(start) = first[call] else {
            continue;
        };
        let path = own[call].path;
        let mut ancestor = tree.parent(call);
        while let Some(above) = ancestor {
            if own[above].path == path {
                break;
            }
            ancestor = tree.parent(above);
        }
        if ancestor.is_some() {
            continue; // nested in a call of the same path, which already counts it
        }
        let key = (start, own[call].level);
        match index_of.get(&path) {
            None => {
                index_of.insert(path, paths.len());
                let total = PathTotal {
                    path,
                    call,
                    flops: flops[call],
                    uncounted: names[call].clone(),
                };
                paths.push((key, total));
            }
            Some(&index) => {
                let entry = &mut paths[index];
                entry.0 = entry.0.min(key);
                entry.1.flops = entry.1.flops.saturating_add(flops[call]);
                entry.1.uncounted.extend(names[call].iter().cloned());
            }
        }
    }
    paths.sort_by_key(|entry| entry.0);
    paths.into_iter().map(|(_, total)| total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tree given by parents; children in call (index) order.
    struct Tree {
        parents: Vec<Option<usize>>,
        children: Vec<Vec<usize>>,
    }

    impl Tree {
        fn new(parents: Vec<Option<usize>>) -> Self {
            let mut children = vec![Vec::new(); parents.len()];
            for (call, parent) in parents.iter().enumerate() {
                if let Some(parent) = parent {
                    children[*parent].push(call);
                }
            }
            Self { parents, children }
        }
    }

    impl CallTree for Tree {
        fn len(&self) -> usize {
            self.parents.len()
        }
        fn parent(&self, call: usize) -> Option<usize> {
            self.parents[call]
        }
        fn children(&self, call: usize) -> &[usize] {
            &self.children[call]
        }
    }

    fn own(path: usize, level: usize, flops: u128, first: Option<u64>) -> OwnOperators {
        OwnOperators {
            path,
            level,
            flops,
            uncounted: BTreeSet::new(),
            first_operator: first,
        }
    }

    #[test]
    fn children_come_before_their_parent() {
        // 0 ( 1 ( 2 ) 3 ) 4
        let tree = Tree::new(vec![None, Some(0), Some(1), Some(0), None]);
        assert_eq!(post_order(&tree), vec![2, 1, 3, 0, 4]);
        assert!(post_order(&Tree::new(Vec::new())).is_empty());
    }

    #[test]
    fn a_path_called_twice_adds_both_calls() {
        // model(0) runs block(1) twice: calls 1 and 2 of path 1, each with its own operators.
        let tree = Tree::new(vec![None, Some(0), Some(0)]);
        let mut calls = vec![
            own(0, 0, 5, Some(0)),
            own(1, 1, 10, Some(1)),
            own(1, 1, 20, Some(2)),
        ];
        calls[2].uncounted.insert("aten::foo".into());
        let totals = path_totals(&tree, &calls, &post_order(&tree));
        assert_eq!(
            totals,
            vec![
                PathTotal {
                    path: 0,
                    call: 0,
                    flops: 35,
                    uncounted: ["aten::foo".to_owned()].into()
                },
                PathTotal {
                    path: 1,
                    call: 1,
                    flops: 30,
                    uncounted: ["aten::foo".to_owned()].into()
                },
            ]
        );
    }

    #[test]
    fn a_recursive_call_is_counted_once() {
        // Path 1 calls itself: the inner call's operators are inside the outer's already.
        let tree = Tree::new(vec![None, Some(0), Some(1)]);
        let calls = [
            own(0, 0, 0, None),
            own(1, 1, 3, Some(0)),
            own(1, 2, 4, Some(1)),
        ];
        let totals = path_totals(&tree, &calls, &post_order(&tree));
        let flops: Vec<(usize, u128)> = totals.iter().map(|t| (t.path, t.flops)).collect();
        assert_eq!(flops, vec![(0, 7), (1, 7)]);
    }

    #[test]
    fn paths_come_in_the_order_they_first_ran_an_operator() {
        // The second child ran the first operator; the parent, at the same position, first.
        let tree = Tree::new(vec![None, Some(0), Some(0)]);
        let calls = [
            own(0, 0, 0, None),
            own(1, 1, 1, Some(5)),
            own(2, 1, 1, Some(2)),
        ];
        let paths: Vec<usize> = path_totals(&tree, &calls, &post_order(&tree))
            .iter()
            .map(|t| t.path)
            .collect();
        assert_eq!(paths, vec![0, 2, 1]);
    }

    /// A random forest: each call's parent is an earlier call or none.
    fn forests() -> impl Strategy<Value = (Vec<Option<usize>>, Vec<u128>, Vec<usize>)> {
        (1usize..24).prop_flat_map(|calls| {
            let parents = (0..calls)
                .map(|call| {
                    if call == 0 {
                        Just(None).boxed()
                    } else {
                        prop::option::of(0..call).boxed()
                    }
                })
                .collect::<Vec<_>>();
            (
                parents,
                prop::collection::vec(0u128..1000, calls),
                prop::collection::vec(0usize..4, calls),
            )
        })
    }

    proptest! {
        #[test]
        fn post_order_visits_every_call_once_after_its_children(
            (parents, _, _) in forests()
        ) {
            let tree = Tree::new(parents);
            let order = post_order(&tree);
            let mut position = vec![usize::MAX; tree.len()];
            for (index, &call) in order.iter().enumerate() {
                prop_assert_eq!(position[call], usize::MAX);
                position[call] = index;
            }
            prop_assert!(position.iter().all(|&p| p != usize::MAX));
            for call in 0..tree.len() {
                if let Some(parent) = tree.parent(call) {
                    prop_assert!(position[call] < position[parent]);
                }
            }
        }

        #[test]
        fn root_paths_sum_to_every_operator(
            (parents, flops, paths) in forests()
        ) {
            // Roots get paths of their own (never repeated below): their totals hold every
            // operator of the forward exactly once.
            let tree = Tree::new(parents.clone());
            let calls: Vec<OwnOperators> = (0..tree.len())
                .map(|call| {
                    let path = if parents[call].is_none() { 100 + call } else { paths[call] };
                    own(path, 0, flops[call], Some(call as u64))
                })
                .collect();
            let totals = path_totals(&tree, &calls, &post_order(&tree));
            let roots: u128 = totals.iter().filter(|t| t.path >= 100).map(|t| t.flops).sum();
            prop_assert_eq!(roots, flops.iter().sum::<u128>());
            // No path counts more than the whole forward.
            for total in &totals {
                prop_assert!(total.flops <= flops.iter().sum::<u128>());
            }
        }
    }
}
